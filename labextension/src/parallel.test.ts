// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import { spaceOf } from './geometry';
import { MAX_LINES, ParallelChart } from './parallel';
import { trial } from './testing';

describe('ParallelChart', () => {
  it('draws the best MAX_LINES completed trials of many and says how many of how many', () => {
    const trials = Array.from({ length: 1000 }, (_, i) =>
      trial(i, 'completed', i / 1000, { x: i / 1000, y: (i * 7) % 10 })
    );
    const space = { x: { uniform: [0, 1] }, y: { uniform: [0, 10] } };
    const chart = new ParallelChart();
    const counts = chart.draw(trials, spaceOf(space, trials), 'acc', 'max');
    expect(counts).toEqual({ drawn: MAX_LINES, completed: 1000 });
    expect(chart.node.querySelectorAll('path')).toHaveLength(MAX_LINES);
    expect(
      chart.node.querySelector('.jd-parallel-best')?.getAttribute('data-trial')
    ).toBe('999');
  });
});
