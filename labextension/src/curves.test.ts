import { describe, expect, it } from 'vitest';

import { Curves, thinned } from './curves';
import type { IMetricsPage } from './wire';

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

describe('thinned', () => {
  it('keeps a curve within its points, evenly spread, its first and latest kept', () => {
    const steps = Array.from({ length: 1000 }, (_, i) => i);
    const values = steps.map(s => s / 10);
    const cut = thinned(steps, values, 50);
    expect(cut.steps).toHaveLength(50);
    expect(cut.steps[0]).toBe(0);
    expect(cut.steps[49]).toBe(999);
    const gaps = cut.steps.slice(1).map((s, i) => s - cut.steps[i]);
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeLessThanOrEqual(1);
    expect(cut.values).toEqual(cut.steps.map(s => s / 10));
    expect(thinned([1, 2], [3, 4], 5)).toEqual({
      steps: [1, 2],
      values: [3, 4]
    });
    expect(thinned([1, 2, 3], [4, 5, 6], 1)).toEqual({
      steps: [3],
      values: [6]
    });
  });
});

describe('Curves at scale', () => {
  const rows = (trialId: number, from: number, to: number) =>
    Array.from(
      { length: to - from },
      (_, i) =>
        [trialId, 0, from + i, 0, { acc: from + i }] as [
          number,
          number,
          number,
          number,
          Record<string, number | null>
        ]
    );
  it('keeps every curve within twice its points as pages arrive, the latest point always last', () => {
    const curves = new Curves('acc', 100);
    for (let step = 0; step < 5000; step += 250) {
      curves.add({
        columns: [],
        rows: [...rows(0, step, step + 250), ...rows(1, step, step + 250)],
        cursor: step,
        more: false
      });
      for (const id of [0, 1]) {
        const curve = curves.curve(id)!;
        expect(curve.steps.length).toBeLessThan(200);
        expect(curve.steps[curve.steps.length - 1]).toBe(step + 249);
      }
    }
    const steps = curves.curve(0)!.steps;
    expect(steps[0]).toBe(0);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps); // still in order
  });
  it('goes on from the cursor of the curves the server sent', () => {
    const curves = Curves.fromSnapshot({
      metric: 'acc',
      trials: [[7, 0, [0, 50, 99], [0, 5, 9.9]]],
      cursor: 1234
    });
    expect(curves.cursor).toBe(1234);
    expect(curves.has(7) && !curves.has(8)).toBe(true);
    curves.add({
      columns: [],
      rows: rows(7, 100, 101),
      cursor: 1240,
      more: false
    });
    expect(curves.curve(7)?.steps).toEqual([0, 50, 99, 100]);
    expect(curves.cursor).toBe(1240);
  });
});

describe('Curves read on from a cursor', () => {
  it("adds each trial's new points, a new attempt replacing the earlier one's from its first step", () => {
    const curves = Curves.fromSnapshot({
      metric: 'acc',
      trials: [
        [0, 0, [0, 1, 2], [0, 0.1, 0.2]],
        [1, 0, [0, 1, 2], [1, 1.1, 1.2]]
      ],
      cursor: 10
    });
    const changed = curves.addCurves({
      metric: 'acc',
      trials: [
        [0, 0, [3, 4], [0.3, null]], // a NaN the server sent as null: no point
        [1, 1, [2, 3], [2.2, 2.3]], // resumed from its step-1 checkpoint
        [5, 0, [0], [5]] // a trial that started since
      ],
      cursor: 20
    });
    expect(changed).toBe(true);
    expect(curves.cursor).toBe(20);
    expect(curves.curve(0)).toEqual({
      attempt: 0,
      steps: [0, 1, 2, 3],
      values: [0, 0.1, 0.2, 0.3]
    });
    expect(curves.curve(1)).toEqual({
      attempt: 1,
      steps: [0, 1, 2, 3],
      values: [1, 1.1, 2.2, 2.3]
    });
    expect(curves.trialIds()).toEqual([0, 1, 5]);
    expect(
      curves.addCurves({
        metric: 'acc',
        trials: [[1, 0, [9], [9]]],
        cursor: 21
      })
    ).toBe(false); // a stale attempt's late point
    expect(curves.cursor).toBe(21);
  });
});
