import { describe, expect, it } from 'vitest';

import {
  earlyStoppingNote,
  formatDuration,
  formatValue,
  paramsAsPython,
  progressText,
  statusText,
  trialDuration,
  trialState
} from './format';
import { detail, summary, trial } from './testing';

describe('formatValue', () => {
  it('writes every number with the same 4 significant digits', () => {
    expect(formatValue(0.919395)).toBe('0.9194');
    expect(formatValue(12.3456)).toBe('12.35');
    expect(formatValue(3)).toBe('3');
    expect(formatValue(1.5e-7)).toBe('1.500e-7');
    expect(formatValue(null)).toBe('–');
  });
});

describe('formatDuration', () => {
  it('reads as a clock', () => {
    expect(formatDuration(7.4)).toBe('00:07');
    expect(formatDuration(3725)).toBe('1:02:05');
    expect(formatDuration(null)).toBe('–');
  });
});

describe('progressText', () => {
  it('groups the thousands of a large run', () => {
    expect(progressText({ trials_done: 9500, trials_total: 10000 })).toBe(
      '9,500/10,000'
    );
    expect(progressText({ trials_done: 7, trials_total: null })).toBe('7/?');
  });
});

describe('statusText', () => {
  it('names the running experiment, its progress and best', () => {
    expect(statusText([summary({})])).toBe('hpo train: 7/32 · best 0.975');
  });
  it('counts the other running ones and ignores finished ones', () => {
    const list = [
      summary({}),
      summary({ name: 'other', best: null }),
      summary({ name: 'old', state: 'completed' })
    ];
    expect(statusText(list)).toBe('hpo train: 7/32 · best 0.975 · +1 more');
  });
  it('is empty when nothing runs, and says ? for a run bounded by time', () => {
    expect(statusText([summary({ state: 'completed' })])).toBe('');
    expect(statusText([summary({ trials_total: null, best: null })])).toBe(
      'hpo train: 7/?'
    );
  });
});

describe('a queued trial', () => {
  const queued = trial(3, 'running', null, {}, { queued: true, began: null });
  it('reads as queued, and as running once it has begun', () => {
    expect(trialState(queued)).toBe('queued');
    expect(trialState({ ...queued, queued: false, began: 100 })).toBe(
      'running'
    );
    expect(trialState(trial(0, 'completed', 1))).toBe('completed');
  });
  it('has no duration while it waits, then counts from when it began (not from when it was sent)', () => {
    expect(trialDuration({ ...queued, started: 100 }, 130)).toBeNull();
    expect(
      trialDuration({ ...queued, started: 100, queued: false, began: 120 }, 130)
    ).toBe(10);
    expect(
      trialDuration(trial(0, 'completed', 1, {}, { duration: 4 }), 130)
    ).toBe(4);
  });
});

describe('paramsAsPython', () => {
  it('copies as Python keyword arguments', () => {
    expect(
      paramsAsPython({
        lr: 0.01,
        arch: 'mlp',
        bn: true,
        layers: [8, 16],
        x: null
      })
    ).toBe('lr=0.01, arch="mlp", bn=True, layers=[8, 16], x=None');
  });
});

describe('earlyStoppingNote', () => {
  it('says ASHA decides, and how to turn it off, only when it does', () => {
    const run = (pruner: string) => {
      const d = detail([]);
      return { ...d, definition: { ...d.definition, details: { pruner } } };
    };
    expect(earlyStoppingNote(run("'asha'"))).toBe(
      'ASHA early stopping · pruner=None to turn it off'
    );
    expect(earlyStoppingNote(run('None'))).toBeNull();
    expect(earlyStoppingNote(run("'median'"))).toBeNull();
    expect(earlyStoppingNote(detail([]))).toBeNull();
  });
});
