/**
 * Which trials' curves a view asks the server for when it opens an experiment (GET .../curves?trials=): the
 * ones its chart can draw, and every one whose curve may still grow, so that reading on from the answer's cursor
 * leaves none of the drawn curves without its beginning.
 */

import { MAX_CURVES } from './chart';
import type { ITrialSummary } from './wire';

/**
 * ``ids`` (any order, repeats allowed) as the server's trial selection: single ids and ranges, ``"3,17,40-59"``,
 * then ``"N-"``: every trial from ``from`` on (those that start after the view looked).
 */
export function trialSpec(ids: number[], from: number | null = null): string {
  const sorted = [...new Set(ids)]
    .filter(id => from === null || id < from)
    .sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) {
      j++;
    }
    parts.push(
      j === i
        ? String(sorted[i])
        : j === i + 1
          ? `${sorted[i]},${sorted[j]}`
          : `${sorted[i]}-${sorted[j]}`
    );
    i = j + 1;
  }
  if (from !== null) {
    parts.push(`${from}-`);
  }
  return parts.join(',');
}

/**
 * The trials whose curves to ask for, given every trial best first (as the chart orders them): the first
 * ``limit`` that reported something, every running one (a running trial may yet become one of the best), and
 * every trial that starts after the detail was read (``trialCount``: how many the experiment had then).
 */
export function curveSelection(
  bestFirst: ITrialSummary[],
  limit = MAX_CURVES,
  trialCount = 0
): string {
  const drawn = bestFirst.filter(t => t.steps > 0).slice(0, limit);
  const running = bestFirst.filter(t => t.state === 'running');
  // The trials listed may be a page of many (the detail's first): trials after the last listed one but before
  // the detail was read are not new, and a range from the last listed id on would ask for all of them. Ids
  // count from 0, so the experiment's trial count is past every id it had.
  const next = bestFirst.reduce(
    (top, t) => Math.max(top, t.trial_id + 1),
    trialCount
  );
  return trialSpec(
    [...drawn, ...running].map(t => t.trial_id),
    next
  );
}
