import { describe, expect, it } from 'vitest';

import { TrialPages, listedTrials, trialCount } from './paging';
import { curveSelection } from './selection';
import { detail, trial } from './testing';

describe('the trials of a 100,000-trial experiment', () => {
  const first = [7, 3, 9].map(i =>
    trial(i, 'completed', 10 - i, {}, { steps: 1 })
  );
  const running = [trial(99_999, 'running', null)];
  const sent = detail(first, { trial_count: 100_000, running });

  it('lists the first page and the running trials once each, then the pages read after', async () => {
    expect(listedTrials(sent, []).trials.map(t => t.trial_id)).toEqual([
      99_999, 7, 3, 9
    ]);
    const asked: number[] = [];
    const pages = new TrialPages(async offset => {
      asked.push(offset);
      return {
        trials: [trial(offset, 'completed', 0), trial(7, 'completed', 3)],
        offset,
        total: 100_000
      };
    });
    expect(pages.hasMore(sent)).toBe(true);
    await pages.next(sent);
    await pages.next(sent);
    expect(asked).toEqual([3, 5]);
    const ids = pages.listed(sent).trials.map(t => t.trial_id);
    expect(ids.sort((a, b) => a - b)).toEqual([3, 5, 7, 9, 99_999]);
    expect(trialCount(sent)).toBe(100_000);
  });

  it('asks for the curves of new trials only, not of every trial after the last one listed', () => {
    expect(curveSelection(first, 40, 100_000)).toBe('3,7,9,100000-');
  });
});
