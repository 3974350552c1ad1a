import { describe, expect, it } from 'vitest';

import { Curves } from './curves';
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
