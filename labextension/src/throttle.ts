/**
 * Asking the server for something costly no more often than it is worth: a run's parameter importances are
 * computed from all its completed trials (~2 s of the server's time for 10,000 of them), and asking at every
 * trial's end would ask 10,000 times.
 */

export interface IThrottleOptions {
  /** The least time between two calls. */
  minMs: number;
  /** Calls are also spaced by this many times the last call's duration, so a slow answer is asked for less. */
  durationFactor?: number;
}

/**
 * Calls ``call`` when asked, at most once per interval, never two at a time: asks in between make one call at
 * the interval's end (the latest state is what matters). A final ask (the run has ended) calls as soon as no call
 * is under way, whatever the interval, and is the last.
 */
export class Throttle {
  private _last = -Infinity;
  private _lastDuration = 0;
  private _running = false;
  private _pending: boolean | null = null; // an ask while a call ran: whether it was final
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _done = false;

  constructor(
    private _call: () => Promise<unknown>,
    private _options: IThrottleOptions
  ) {}

  /** The least time between two calls now. */
  get intervalMs(): number {
    return Math.max(
      this._options.minMs,
      (this._options.durationFactor ?? 0) * this._lastDuration
    );
  }

  ask(final = false): void {
    if (this._done) {
      return;
    }
    if (this._running) {
      this._pending = (this._pending ?? false) || final;
      return;
    }
    const wait = this._last + this.intervalMs - Date.now();
    if (final || wait <= 0) {
      this._fire(final);
    } else if (this._timer === null) {
      this._timer = setTimeout(() => {
        this._timer = null;
        this._fire(false);
      }, wait);
    }
  }

  dispose(): void {
    this._done = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private _fire(final: boolean): void {
    if (this._done) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    if (final) {
      this._done = true;
    }
    this._running = true;
    const started = Date.now();
    this._last = started;
    const settled = () => {
      this._running = false;
      this._lastDuration = Date.now() - started;
      const pending = this._pending;
      this._pending = null;
      if (pending !== null && !final) {
        this.ask(pending);
      }
    };
    this._call().then(settled, settled);
  }
}
