import { describe, expect, it } from 'vitest';

import { NOTHING_PICKED, pick, stillListed } from './picking';

// The panel's rows, newest first.
const LISTED = ['e', 'd', 'c', 'b', 'a'];

describe('pick', () => {
  it('picks one alone on a plain click, as the file browser does', () => {
    const two = pick(pick(NOTHING_PICKED, LISTED, 'd'), LISTED, 'b', {
      toggle: true
    });
    expect(pick(two, LISTED, 'a')).toEqual({ picked: ['a'], anchor: 'a' });
  });

  it('adds or removes one on a Ctrl/Cmd-click, keeping the listing order', () => {
    let state = pick(NOTHING_PICKED, LISTED, 'b');
    state = pick(state, LISTED, 'e', { toggle: true });
    expect(state).toEqual({ picked: ['e', 'b'], anchor: 'e' });
    state = pick(state, LISTED, 'b', { toggle: true });
    expect(state).toEqual({ picked: ['e'], anchor: 'b' });
  });

  it('adds the rows from the anchor to the one Shift-clicked, either way', () => {
    let state = pick(NOTHING_PICKED, LISTED, 'd');
    state = pick(state, LISTED, 'b', { range: true });
    expect(state).toEqual({ picked: ['d', 'c', 'b'], anchor: 'd' });
    // From the same anchor, upwards, with a toggled one kept.
    state = pick(pick(state, LISTED, 'a', { toggle: true }), LISTED, 'e', {
      range: true
    });
    expect(state.picked).toEqual(['e', 'd', 'c', 'b', 'a']);
    // No anchor yet: the row itself.
    expect(pick(NOTHING_PICKED, LISTED, 'c', { range: true })).toEqual({
      picked: ['c'],
      anchor: 'c'
    });
  });
});

describe('stillListed', () => {
  it('drops the experiments the listing no longer has, and keeps the rest as they were', () => {
    const state = { picked: ['d', 'b'], anchor: 'b' };
    expect(stillListed(state, ['f', ...LISTED])).toBe(state);
    expect(stillListed(state, ['f', 'e', 'd', 'c'])).toEqual({
      picked: ['d'],
      anchor: null
    });
  });
});
