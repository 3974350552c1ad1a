import { describe, expect, it } from 'vitest';

import { ablationRows } from './ablation';
import { trial } from './testing';

describe('ablationRows', () => {
  const run = (
    id: number,
    ablated: string,
    kind: string,
    value: number | null,
    state = 'completed'
  ) => trial(id, state, value, {}, { labels: { ablated, kind, repeat: 0 } });
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
