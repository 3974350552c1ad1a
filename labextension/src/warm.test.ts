import { describe, expect, it } from 'vitest';

import { objectiveData } from './chart';
import { detail, trial } from './testing';
import { warmStartPoints } from './warm';

const told = (
  id: number,
  state: string,
  values: number[] | null,
  curve: [number, number][] = []
) => ({ experiment: 'a', trial_id: id, params: {}, state, values, curve });

const WARM = {
  from: ['a'],
  outside: 0,
  trials: [
    told(3, 'completed', [0.5], [[0, 0.25]]),
    told(4, 'pruned', null, [
      [0, 0.125],
      [1, 0.375]
    ]),
    told(5, 'pruned', null) // stopped before its first report: nothing to draw
  ]
};

const warmRun = (over = {}) => {
  const run = detail([trial(0, 'completed', 0.75), trial(1, 'pruned', 0.5)]);
  return {
    ...run,
    definition: { ...run.definition, details: { warm_start: WARM } },
    ...over
  };
};

describe('a warm start in the objective chart', () => {
  it("draws each told trial with a value, a pruned one's last, named as the status line names them", () => {
    expect(warmStartPoints(warmRun())).toEqual({
      label: "warm start (2 from 'a')",
      values: [0.5, 0.375]
    });
  });

  it('draws none for a run not warm-started, nor for one of several objectives', () => {
    expect(warmStartPoints(detail([trial(0, 'completed', 0.75)]))).toBeNull();
    const several = warmRun();
    several.definition = {
      ...several.definition,
      objectives: [
        ['acc', 'max'],
        ['ms', 'min']
      ]
    };
    expect(warmStartPoints(several)).toBeNull();
  });

  it("puts the told trials before the run's trial 0, apart from its own and its best so far", () => {
    const run = warmRun();
    expect(objectiveData(run.trials, 'max', warmStartPoints(run))).toEqual([
      [-2, -1, 0, 1],
      [0.5, 0.375, null, null], // told
      [null, null, 0.75, null], // completed
      [null, null, null, 0.5], // pruned or stopped
      [null, null, 0.75, 0.75] // best so far: the run's own
    ]);
    expect(objectiveData(run.trials, 'max')).toEqual([
      [0, 1],
      [0.75, null],
      [null, 0.5],
      [0.75, 0.75]
    ]);
  });
});
