import { describe, expect, it } from 'vitest';

import { parallelCoordinates } from './geometry';
import { trial } from './testing';

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
