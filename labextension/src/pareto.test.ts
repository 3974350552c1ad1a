import { describe, expect, it } from 'vitest';

import {
  hypervolume,
  minimised,
  nonDominated,
  objectivesOf,
  paretoReport
} from './pareto';
import { detail, trial } from './testing';

const OBJECTIVES = {
  names: ['acc', 'ms'],
  modes: ['max', 'min'] as ('max' | 'min')[]
};

const run = (id: number, acc: number, ms: number, over = {}) =>
  trial(
    id,
    'completed',
    acc,
    {},
    { last: { ms }, started: id, duration: 1, ...over }
  );

describe('the Pareto arithmetic', () => {
  it('finds the front and its hypervolume by hand', () => {
    const points = [
      [1, 5],
      [2, 3],
      [3, 4],
      [4, 1],
      [5, 5]
    ];
    expect(nonDominated(points)).toEqual([0, 1, 3]);
    expect(hypervolume(points, [6, 6])).toBeCloseTo(17); // 5*1 + 4*2 + 2*2
    expect(hypervolume([[1, 1, 1]], [2, 3, 4])).toBeCloseTo(6);
    expect(
      hypervolume(
        [
          [1, 2, 1],
          [2, 1, 2]
        ],
        [3, 3, 3]
      )
    ).toBeCloseTo(2 * 1 * 2 + 1 * 2 * 1 - 1 * 1 * 1);
    expect(minimised([0.9, 20], ['max', 'min'])).toEqual([-0.9, 20]);
  });
});

describe('paretoReport', () => {
  it('keeps the completed, feasible trials, marks the front and follows the hypervolume', () => {
    const trials = [
      run(0, 0.9, 30),
      run(1, 0.8, 10),
      run(2, 0.7, 20), // dominated by trial 1
      run(3, 0.95, 50, { constraints: [5] }), // infeasible
      trial(4, 'pruned', 0.99, {}, { last: { ms: 1 } })
    ];
    const report = paretoReport(trials, OBJECTIVES);
    expect(report.points.map(p => p.trialId)).toEqual([0, 1, 2]);
    expect([...report.front].sort()).toEqual([0, 1]);
    expect(report.history.length).toBe(3);
    expect(report.history[1]).toBeGreaterThan(report.history[0]);
    expect(report.history[2]).toBe(report.history[1]); // a dominated trial adds nothing
  });
  it('reads the objectives from the definition, only when there are several', () => {
    const several = detail([], {});
    several.definition.objectives = [
      ['acc', 'max'],
      ['ms', 'min']
    ];
    expect(objectivesOf(several)).toEqual(OBJECTIVES);
    expect(objectivesOf(detail([], {}))).toBeNull();
  });
});
