import { describe, expect, it } from 'vitest';

import { parallelCoordinates, spaceOf } from './geometry';
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

describe('spaceOf', () => {
  it("keeps a definition's space", () => {
    const space = { lr: { uniform: [0, 1] } };
    expect(spaceOf(space, [trial(0, 'completed', 1, { lr: 0.5 })])).toBe(space);
  });

  it("reads a define-by-run run's space from its trials: numbers as numbers, the rest as choices", () => {
    const trials = [
      trial(0, 'completed', 0.5, { optimizer: 'sgd', lr: 0.1, momentum: 0.9 }),
      trial(1, 'completed', 0.7, { optimizer: 'adam', lr: 0.01 })
    ];
    const space = spaceOf({}, trials);
    expect(space).toEqual({
      optimizer: { choice: ['sgd', 'adam'] },
      lr: { uniform: [] },
      momentum: { uniform: [] }
    });
    const { axes } = parallelCoordinates(trials, space, 'acc', 'max');
    expect(axes.map(a => a.name)).toEqual([
      'optimizer',
      'lr',
      'momentum',
      'acc'
    ]);
    expect(axes[2].position(undefined)).toBeNull(); // an inactive parameter: no point on its axis
    const { lines } = parallelCoordinates(trials, space, 'acc', 'max');
    expect(lines.find(l => l.trialId === 1)?.points[2]).toBeNull(); // adam's momentum: none, not the axis' foot
  });
});
