import { describe, expect, it } from 'vitest';

import {
  bestTrial,
  inParamOrder,
  paramNames,
  sortByColumn,
  sortTrials
} from './ordering';
import { detail, trial } from './testing';

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

describe('paramNames', () => {
  it('keeps the search space order, not the alphabet', () => {
    const trials = [
      trial(0, 'completed', 1, { lr: 0.1, batch: 8 }),
      trial(1, 'completed', 1, { lr: 0.2, arch: 'a', batch: 8 })
    ];
    expect(paramNames(trials)).toEqual(['lr', 'batch', 'arch']);
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
  it('sorts by the state the table shows: a queued trial as queued', () => {
    const states = [
      trial(0, 'running', null),
      trial(1, 'running', null, {}, { queued: true, began: null }),
      trial(2, 'pruned', 0.1)
    ];
    expect(
      sortByColumn(states, 'state', 'acc', true).map(t => t.trial_id)
    ).toEqual([2, 1, 0]);
  });
});

describe('inParamOrder', () => {
  // What a saved notebook gives back: JSON with every object's keys sorted.
  const saved = detail(
    [trial(0, 'completed', 0.9, { arch: 'mlp', batch: 32, lr: 0.1 })],
    {
      best: {
        trial_id: 0,
        value: 0.9,
        params: { arch: 'mlp', batch: 32, lr: 0.1 }
      }
    }
  );
  saved.definition.space = { arch: {}, batch: {}, lr: {} };

  it("puts the parameters back in the space's order, everywhere the views read them", () => {
    const ordered = inParamOrder(saved, ['lr', 'batch', 'arch']);
    expect(Object.keys(ordered.definition.space)).toEqual([
      'lr',
      'batch',
      'arch'
    ]);
    expect(Object.keys(ordered.best!.params)).toEqual(['lr', 'batch', 'arch']);
    expect(paramNames(ordered.trials)).toEqual(['lr', 'batch', 'arch']);
  });

  it('leaves a snapshot saved without an order as it is', () => {
    expect(inParamOrder(saved, undefined)).toBe(saved);
    expect(Object.keys(inParamOrder(saved, ['lr']).trials[0].params)).toEqual([
      'lr',
      'arch',
      'batch'
    ]);
  });
});
