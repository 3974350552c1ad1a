import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { Throttle } from './throttle';

describe('Throttle', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const counted = (answerMs = 10) => {
    const calls: number[] = [];
    const call = () => {
      calls.push(Date.now());
      return new Promise<void>(resolve => setTimeout(resolve, answerMs));
    };
    return { calls, call };
  };

  it('asks at most once per interval however often it is asked, and once more after the last ask', async () => {
    const { calls, call } = counted();
    const throttle = new Throttle(call, { minMs: 5000 });
    const start = Date.now();
    for (let i = 0; i < 10_000; i++) {
      throttle.ask(); // a trial ended, 10,000 times in 12 s
      await vi.advanceTimersByTimeAsync(1.2);
    }
    await vi.advanceTimersByTimeAsync(10_000);
    // At 0, 5 and 10 s; the asks of 10-12 s in one call at 15 s; then none.
    expect(calls.map(t => t - start)).toEqual([0, 5000, 10000, 15000]);
    throttle.dispose();
  });

  it('asks again at the interval after an ask in between, and never two at a time', async () => {
    const { calls, call } = counted(8000); // an answer slower than the interval
    const throttle = new Throttle(call, { minMs: 5000 });
    throttle.ask();
    await vi.advanceTimersByTimeAsync(6000);
    throttle.ask(); // the first is still under way
    expect(calls.length).toBe(1);
    await vi.advanceTimersByTimeAsync(2000); // it answers at 8 s: the ask waiting is made then
    expect(calls.length).toBe(2);
    throttle.dispose();
  });

  it('spaces its calls by how long the last answer took', async () => {
    const { calls, call } = counted(3000);
    const throttle = new Throttle(call, { minMs: 1000, durationFactor: 4 });
    throttle.ask();
    await vi.advanceTimersByTimeAsync(3000);
    expect(throttle.intervalMs).toBe(12_000);
    throttle.ask();
    await vi.advanceTimersByTimeAsync(8000);
    expect(calls.length).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls.length).toBe(2); // 12 s after the first began
    throttle.dispose();
  });

  it('makes a final ask at once, after the one under way, and nothing after it', async () => {
    const { calls, call } = counted(100);
    const throttle = new Throttle(call, { minMs: 5000 });
    throttle.ask();
    throttle.ask(true); // the run ended while the first call was under way
    await vi.advanceTimersByTimeAsync(100);
    expect(calls.length).toBe(2);
    throttle.ask(true);
    throttle.ask();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.length).toBe(2);
  });
});
