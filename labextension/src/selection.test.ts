import { describe, expect, it } from 'vitest';

import { curveSelection, trialSpec } from './selection';
import { trial } from './testing';

describe('trialSpec', () => {
  it('writes ids as single ids and ranges, then every trial from the next on', () => {
    expect(trialSpec([5, 1, 2, 3, 9, 10, 3, 20])).toBe('1-3,5,9,10,20');
    expect(trialSpec([4, 0, 1, 2], 3)).toBe('0-2,3-');
    expect(trialSpec([], 0)).toBe('0-');
  });
  it('keeps a selection of 960 running trials short', () => {
    const ids = Array.from({ length: 960 }, (_, i) => 9040 + i);
    expect(trialSpec([...ids, 3, 17], 10000)).toBe('3,17,9040-9999,10000-');
  });
});

describe('curveSelection', () => {
  it('asks for the curves the chart can draw, every running trial, and the trials to come', () => {
    const bestFirst = [
      ...Array.from({ length: 50 }, (_, i) =>
        trial(100 + i, 'completed', 1 - i / 100, {}, { steps: 10 })
      ),
      trial(7, 'running', null, {}, { steps: 3 }),
      trial(6, 'running', null, {}, { steps: 0 }), // queued: nothing reported yet
      trial(1, 'pruned', 0.1, {}, { steps: 2 }),
      trial(2, 'failed', null, {}, { steps: 0 })
    ];
    // The 40 best (100-139), the running 6 and 7, and every trial from 150 on; not 140-149, 1 or 2.
    expect(curveSelection(bestFirst)).toBe('6,7,100-139,150-');
  });
});
