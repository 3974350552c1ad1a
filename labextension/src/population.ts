/**
 * A population-based-training run (kind "pbt") as the views draw it: each segment's lineage (the member whose
 * first weights it carries on, which colours its curve) and each member's hyperparameter schedule. Read from the
 * segments' labels (member, donor, from_trial, from_step), as jupyter_dist/experiment/_population.py reads them.
 */

import type { ITrialSummary } from './wire';

/** Each segment's origin: the member whose first weights it carries on (a copy carries the donor's origin). */
export function lineageOrigins(trials: ITrialSummary[]): Map<number, number> {
  const byId = new Map(trials.map(t => [t.trial_id, t]));
  const origins = new Map<number, number>();
  // A segment always goes on from one that ran before it: a smaller trial id.
  for (const t of [...trials].sort((a, b) => a.trial_id - b.trial_id)) {
    const parent = t.labels.from_trial;
    const parentTrial =
      typeof parent === 'number' ? byId.get(parent) : undefined;
    if (parentTrial === undefined) {
      origins.set(t.trial_id, memberOf(t));
    } else {
      origins.set(
        t.trial_id,
        origins.get(parentTrial.trial_id) ?? memberOf(parentTrial)
      );
    }
  }
  return origins;
}

function memberOf(t: ITrialSummary): number {
  return typeof t.labels.member === 'number' ? t.labels.member : t.trial_id;
}

/** The first step a segment trained: the step after the checkpoint it went on from, 0 for a member's start. */
export function firstStep(t: ITrialSummary): number {
  const from = t.labels.from_step;
  return typeof from === 'number' ? from + 1 : 0;
}

export interface ISchedule {
  members: number[];
  steps: number[]; // every step at which some member's value of the parameter was set
  values: (number | null)[][]; // per member, its value at each step (carried forward; null before it began)
}

/** The numeric parameter ``name``'s schedule, member by member: its value from each segment's first step on. */
export function schedule(trials: ITrialSummary[], name: string): ISchedule {
  const bySegment = trials
    .filter(t => typeof t.params[name] === 'number')
    .sort((a, b) => a.trial_id - b.trial_id);
  const members = [...new Set(bySegment.map(memberOf))].sort((a, b) => a - b);
  const steps = [...new Set(bySegment.map(firstStep))].sort((a, b) => a - b);
  const at = new Map(steps.map((s, i) => [s, i]));
  const values = members.map(member => {
    const row: (number | null)[] = new Array(steps.length).fill(null);
    for (const t of bySegment) {
      if (memberOf(t) === member) {
        // a later segment from the same step (copied again at once) overrides an earlier one
        row[at.get(firstStep(t)) as number] = t.params[name] as number;
      }
    }
    let last: number | null = null;
    return row.map(v => (last = v ?? last));
  });
  return { members, steps, values };
}
