import { describe, expect, it } from 'vitest';

import {
  ablationRows,
  bestTrial,
  Curves,
  formatDuration,
  formatValue,
  IExperimentSummary,
  IMetricsPage,
  ITrial,
  paramNames,
  paramsAsPython,
  parallelCoordinates,
  sortByColumn,
  sortTrials,
  statusText
} from './model';

function trial(
  id: number,
  state: string,
  value: number | null,
  params = {}
): ITrial {
  return {
    trial_id: id,
    state,
    value,
    params,
    labels: {},
    started: 0,
    duration: null,
    steps: 0,
    attempts: 1,
    last: {},
    error: null
  };
}

function summary(over: Partial<IExperimentSummary>): IExperimentSummary {
  return {
    id: '20261123-141502-3f9a1c',
    name: 'train',
    kind: 'hpo',
    state: 'running',
    trials_done: 7,
    trials_total: 32,
    metric: 'acc',
    mode: 'max',
    best: 0.975,
    started: 0,
    duration: 1,
    ...over
  };
}

describe('formatValue', () => {
  it('writes every number with the same 4 significant digits', () => {
    expect(formatValue(0.919395)).toBe('0.9194');
    expect(formatValue(12.3456)).toBe('12.35');
    expect(formatValue(3)).toBe('3');
    expect(formatValue(1.5e-7)).toBe('1.500e-7');
    expect(formatValue(null)).toBe('–');
  });
});

describe('formatDuration', () => {
  it('reads as a clock', () => {
    expect(formatDuration(7.4)).toBe('00:07');
    expect(formatDuration(3725)).toBe('1:02:05');
    expect(formatDuration(null)).toBe('–');
  });
});

describe('statusText', () => {
  it('names the running experiment, its progress and best', () => {
    expect(statusText([summary({})])).toBe('hpo train: 7/32 · best 0.975');
  });
  it('counts the other running ones and ignores finished ones', () => {
    const list = [
      summary({}),
      summary({ name: 'other', best: null }),
      summary({ name: 'old', state: 'completed' })
    ];
    expect(statusText(list)).toBe('hpo train: 7/32 · best 0.975 · +1 more');
  });
  it('is empty when nothing runs, and says ? for a run bounded by time', () => {
    expect(statusText([summary({ state: 'completed' })])).toBe('');
    expect(statusText([summary({ trials_total: null, best: null })])).toBe(
      'hpo train: 7/?'
    );
  });
});

describe('sortTrials', () => {
  const trials = [
    trial(0, 'completed', 0.5),
    trial(1, 'running', null),
    trial(2, 'completed', 0.9),
    trial(3, 'pruned', 0.1),
    trial(4, 'running', null),
    trial(5, 'failed', null)
  ];
  it('puts the best completed trials first, then the running ones (newest first), then the rest', () => {
    expect(sortTrials(trials, 'max').map(t => t.trial_id)).toEqual([
      2, 0, 4, 1, 3, 5
    ]);
    expect(sortTrials(trials, 'min').map(t => t.trial_id)).toEqual([
      0, 2, 4, 1, 3, 5
    ]);
  });
  it('keeps id order without an objective, and finds the best', () => {
    expect(sortTrials(trials, null).map(t => t.trial_id)).toEqual([
      0, 1, 2, 3, 4, 5
    ]);
    expect(bestTrial(trials, 'max')?.trial_id).toBe(2);
    expect(bestTrial([trial(0, 'running', null)], 'max')).toBeNull();
  });
});

describe('parameters', () => {
  it('keep the search space order, not the alphabet', () => {
    const trials = [
      trial(0, 'completed', 1, { lr: 0.1, batch: 8 }),
      trial(1, 'completed', 1, { lr: 0.2, arch: 'a', batch: 8 })
    ];
    expect(paramNames(trials)).toEqual(['lr', 'batch', 'arch']);
  });
  it('copy as Python keyword arguments', () => {
    expect(
      paramsAsPython({
        lr: 0.01,
        arch: 'mlp',
        bn: true,
        layers: [8, 16],
        x: null
      })
    ).toBe('lr=0.01, arch="mlp", bn=True, layers=[8, 16], x=None');
  });
});

describe('Curves', () => {
  const page = (rows: IMetricsPage['rows'], cursor: number): IMetricsPage => ({
    columns: ['trial_id', 'attempt', 'step', 'sent_at', 'metrics'],
    rows,
    cursor,
    more: false
  });
  it('grows per trial from incremental pages and moves the cursor', () => {
    const curves = new Curves('acc');
    expect(
      curves.add(
        page(
          [
            [0, 0, 0, 1, { acc: 0.1 }],
            [1, 0, 0, 1, { acc: 0.2, loss: 1 }]
          ],
          2
        )
      )
    ).toBe(true);
    expect(
      curves.add(
        page(
          [
            [0, 0, 1, 2, { acc: 0.3 }],
            [1, 0, 1, 2, { loss: 0.5 }]
          ],
          4
        )
      )
    ).toBe(true);
    expect(curves.cursor).toBe(4);
    expect(curves.curve(0)).toEqual({
      attempt: 0,
      steps: [0, 1],
      values: [0.1, 0.3]
    });
    expect(curves.curve(1)?.values).toEqual([0.2]);
    expect(curves.add(page([], 4))).toBe(false);
  });
  it('starts a re-run trial over and ignores its stale attempt', () => {
    const curves = new Curves('acc');
    curves.add(
      page(
        [
          [0, 0, 0, 1, { acc: 0.1 }],
          [0, 0, 1, 1, { acc: 0.2 }],
          [0, 1, 0, 2, { acc: 0.15 }],
          [0, 0, 2, 2, { acc: 0.9 }]
        ],
        4
      )
    );
    expect(curves.curve(0)).toEqual({ attempt: 1, steps: [0], values: [0.15] });
  });
  it('continues the curve of an attempt that resumed from a checkpoint', () => {
    const curves = new Curves('acc');
    curves.add(
      page(
        [
          [0, 0, 0, 1, { acc: 0.1 }],
          [0, 0, 1, 1, { acc: 0.2 }],
          [0, 0, 2, 1, { acc: 0.3 }], // after the checkpoint of step 1: lost with the worker
          [0, 1, 2, 2, { acc: 0.35 }]
        ],
        4
      )
    );
    expect(curves.curve(0)).toEqual({
      attempt: 1,
      steps: [0, 1, 2],
      values: [0.1, 0.2, 0.35]
    });
  });
  it('draws the first metric reported when the run has no objective', () => {
    const curves = new Curves(null);
    curves.add(
      page(
        [
          [0, 0, 0, 1, { loss: 2 }],
          [0, 0, 1, 1, { loss: 1, acc: 0.5 }]
        ],
        2
      )
    );
    expect(curves.metric).toBe('loss');
    expect(curves.curve(0)?.values).toEqual([2, 1]);
  });
  it('skips null values (a NaN the server sent as null)', () => {
    const curves = new Curves('acc');
    curves.add(
      page(
        [
          [0, 0, 0, 1, { acc: null }],
          [0, 0, 1, 1, { acc: 0.5 }]
        ],
        2
      )
    );
    expect(curves.curve(0)?.steps).toEqual([1]);
  });
});

describe('ablationRows', () => {
  const run = (
    id: number,
    ablated: string,
    kind: string,
    value: number | null,
    state = 'completed'
  ) => ({
    ...trial(id, state, value),
    labels: { ablated, kind, repeat: 0 }
  });
  it('puts the baseline first, then components by how much the objective loses without them', () => {
    const trials = [
      run(0, 'baseline', 'baseline', 0.9),
      run(1, 'dropout', 'module', 0.88),
      run(2, 'feature:x', 'feature', 0.7),
      run(3, 'feature:x', 'feature', 0.8),
      run(4, 'flag:bn', 'flag', null, 'failed')
    ];
    const rows = ablationRows(trials, 'max');
    expect(rows.map(r => r.component)).toEqual([
      'baseline',
      'feature:x',
      'dropout',
      'flag:bn'
    ]);
    expect(rows[1].impact).toBeCloseTo(0.15);
    expect(rows[1].n).toBe(2);
    expect(rows[3]).toMatchObject({ mean: null, impact: null, n: 0 });
  });
});

describe('sortByColumn', () => {
  const trials = [
    trial(0, 'completed', 0.5, { lr: 0.1 }),
    trial(1, 'running', null, { lr: 0.3 }),
    trial(2, 'completed', 0.9, { lr: 0.2 })
  ];
  it('sorts by a parameter or the metric, missing values last either way', () => {
    expect(
      sortByColumn(trials, 'lr', 'acc', true).map(t => t.trial_id)
    ).toEqual([0, 2, 1]);
    expect(
      sortByColumn(trials, 'acc', 'acc', false).map(t => t.trial_id)
    ).toEqual([2, 0, 1]);
    expect(
      sortByColumn(trials, 'acc', 'acc', true).map(t => t.trial_id)
    ).toEqual([0, 2, 1]);
  });
});

describe('parallelCoordinates', () => {
  const space = {
    lr: { uniform: [0.001, 0.1], log: true },
    width: { choice: [8, 32, 64] },
    fixed: { value: 3 }
  };
  const trials = [
    trial(0, 'completed', 0.5, { lr: 0.001, width: 32 }),
    trial(1, 'completed', 0.9, { lr: 0.1, width: 8 }),
    trial(2, 'running', null, { lr: 0.01, width: 64 })
  ];
  it('puts searched parameters and the objective on axes, log where searched on a log scale', () => {
    const { axes, lines } = parallelCoordinates(trials, space, 'acc', 'max');
    expect(axes.map(a => a.name)).toEqual(['lr', 'width', 'acc']);
    expect(axes[1].ticks.map(t => t.label)).toEqual(['8', '32', '64']); // a choice: its order, not numeric
    expect(lines.map(l => l.trialId)).toEqual([1, 0]); // completed only, best first
    expect(lines[0].points).toEqual([1, 0, 1]);
    expect(lines[1].points).toEqual([0, 0.5, 0]);
    expect(axes[0].position(0.01)).toBeCloseTo(0.5); // halfway on a log axis
  });
});
