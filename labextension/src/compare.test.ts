// @vitest-environment happy-dom
// The comparison draws into the DOM: a DOM without a browser.
import { describe, expect, it, vi } from 'vitest';

import { alignedLines } from './chart';
import {
  ComparisonView,
  SUMMARY_COLUMNS,
  comparisonLines,
  labelsOf,
  metricsLabel,
  summaryCells
} from './compare';
import type { IComparedExperiment } from './wire';

// The view asks the server when it is made: here it is drawn by hand.
vi.mock('./api', () => ({ getComparison: () => new Promise(() => {}) }));
// uPlot draws on a canvas, which a DOM without a browser lacks (tests/lab/test_compare_view.py draws it): the
// charts here keep what they were asked to draw.
const drawn: { node: string; labels: string[] }[] = vi.hoisted(() => []);
vi.mock('./chart', async original => ({
  ...(await original<typeof import('./chart')>()),
  BestSoFarChart: class {
    node = document.createElement('div');
    constructor(readonly className: string) {}
    draw(_x: string, _y: string, lines: { label: string }[]) {
      drawn.push({ node: this.className, labels: lines.map(l => l.label) });
    }
    resize() {}
    dispose() {}
  }
}));

function compared(over: Partial<IComparedExperiment>): IComparedExperiment {
  return {
    id: '20261204-101500-aaaaaa',
    name: 'random',
    kind: 'hpo',
    state: 'completed',
    trials: 3,
    best_value: 0.9,
    best_params: { lr: 0.01, arch: 'mlp' },
    duration: 75,
    started: 0,
    metric: 'acc',
    mode: 'max',
    ended: [1.5, 2.25, 4],
    best_so_far: [0.5, 0.5, 0.9],
    importances: null,
    ...over
  };
}

const RANDOM = compared({});
const TPE = compared({
  id: '20261204-101600-bbbbbb',
  name: 'tpe',
  trials: 2,
  ended: [1, 2.25],
  best_so_far: [0.7, 0.95],
  best_value: 0.95,
  importances: {
    evaluator: 'PED-ANOVA',
    completed: 2,
    needed: 5,
    importances: { lr: 0.8, arch: 0.2 }
  }
});

describe('comparisonLines', () => {
  it('draws each best so far over its completed trials, or over its seconds', () => {
    expect(comparisonLines([RANDOM, TPE], 'trial')).toEqual([
      { label: 'random', xs: [1, 2, 3], ys: [0.5, 0.5, 0.9] },
      { label: 'tpe', xs: [1, 2], ys: [0.7, 0.95] }
    ]);
    const byTime = comparisonLines([RANDOM, TPE], 'time');
    expect(byTime.map(line => line.xs)).toEqual([
      [1.5, 2.25, 4],
      [1, 2.25]
    ]);
    // One row per x of either, each line null where it has no point.
    expect(alignedLines(byTime)).toEqual([
      [1, 1.5, 2.25, 4],
      [null, 0.5, 0.5, 0.9],
      [0.7, null, 0.95, null]
    ]);
  });

  it('tells experiments of the same name apart by their ids', () => {
    const again = compared({ id: '20261204-111111-cccccc' });
    expect(labelsOf([RANDOM, TPE, again])).toEqual([
      'random (20261204-101500-aaaaaa)',
      'tpe',
      'random (20261204-111111-cccccc)'
    ]);
  });
});

describe('the summary', () => {
  it("has Comparison.summary's columns, written as every view writes them", () => {
    const cells = summaryCells(RANDOM);
    expect(cells).toHaveLength(SUMMARY_COLUMNS.length);
    expect(cells.slice(0, 7)).toEqual([
      'random',
      'hpo',
      'completed',
      '3',
      '0.9',
      "lr=0.01, arch='mlp'",
      '01:15'
    ]);
    const nothing = summaryCells(
      compared({ best_value: null, best_params: null })
    );
    expect(nothing.slice(4, 6)).toEqual(['–', '–']);
    expect(metricsLabel([RANDOM, TPE, compared({ metric: 'loss' })])).toBe(
      'acc, loss'
    );
  });
});

describe('ComparisonView', () => {
  it('draws a row and a line per experiment, and the HPO importances side by side', () => {
    const view = new ComparisonView([RANDOM.id, TPE.id], 2);
    view.draw({ experiments: [RANDOM, TPE] });
    const rows = [...view.node.querySelectorAll('.jd-compare-table tbody tr')];
    expect(rows.map(row => row.getAttribute('data-id'))).toEqual([
      RANDOM.id,
      TPE.id
    ]);
    expect(
      [...view.node.querySelectorAll('.jd-compare-table th')].map(
        th => th.textContent
      )
    ).toEqual(SUMMARY_COLUMNS);
    expect(view.title.label).toBe('Compare random, tpe');
    expect(drawn).toEqual([
      { node: 'jd-compare-by-trial', labels: ['random', 'tpe'] },
      { node: 'jd-compare-by-time', labels: ['random', 'tpe'] }
    ]);
    // Only the run with importances has a column of them.
    const columns = view.node.querySelectorAll('.jd-compare-importance');
    expect([...columns].map(c => c.getAttribute('data-id'))).toEqual([TPE.id]);
    expect(columns[0].textContent).toContain('tpe');
    view.dispose();
  });
});
