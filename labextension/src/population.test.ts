import { describe, expect, it } from 'vitest';

import { firstStep, lineageOrigins, schedule } from './population';
import { resumeIsNews } from './table';
import { trial } from './testing';

const segment = (
  id: number,
  member: number,
  donor: number,
  fromTrial: number | null,
  fromStep: number | null,
  lr: number
) =>
  trial(
    id,
    'completed',
    1,
    { lr },
    {
      labels: {
        member,
        donor,
        from_trial: fromTrial,
        from_step: fromStep
      }
    }
  );

// Two members: member 1 copies member 0 at step 3, then both go on.
const RUN = [
  segment(0, 0, 0, null, null, 0.1),
  segment(1, 1, 1, null, null, 0.01),
  segment(2, 0, 0, 0, 3, 0.1),
  segment(3, 1, 0, 2, 3, 0.12),
  segment(4, 1, 1, 3, 7, 0.12)
];

describe('lineageOrigins', () => {
  it("gives a copy its donor's origin, and every later segment of its member too", () => {
    const origins = lineageOrigins(RUN);
    expect([...origins.entries()].sort((a, b) => a[0] - b[0])).toEqual([
      [0, 0],
      [1, 1],
      [2, 0],
      [3, 0],
      [4, 0]
    ]);
  });
  it('starts a lineage at a segment whose parent it has not got', () => {
    expect(lineageOrigins([RUN[3]]).get(3)).toBe(1);
  });
});

describe('schedule', () => {
  it("gives each member's value from each segment's first step, carried forward", () => {
    expect(firstStep(RUN[3])).toBe(4);
    expect(schedule(RUN, 'lr')).toEqual({
      members: [0, 1],
      steps: [0, 4, 8],
      values: [
        [0.1, 0.1, 0.1],
        [0.01, 0.12, 0.12]
      ]
    });
  });
  it('skips a parameter that is not a number', () => {
    expect(schedule(RUN, 'act').members).toEqual([]);
  });
});

describe('resumeIsNews', () => {
  it("is quiet about a segment's planned start, not about a resume after a lost worker", () => {
    const planned = { ...RUN[2], resumed_from: 3 };
    expect(resumeIsNews(planned)).toBe(false);
    expect(resumeIsNews({ ...planned, attempts: 2, resumed_from: 5 })).toBe(
      true
    );
    expect(
      resumeIsNews(trial(7, 'running', null, {}, { resumed_from: 4 }))
    ).toBe(true);
    expect(resumeIsNews(trial(8, 'running', null))).toBe(false);
  });
});
