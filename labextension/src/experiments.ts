/**
 * The experiments of the server's store, polled: one instance feeds the sidebar panel and the status-bar item,
 * so the listing is fetched once per interval however many views show it.
 */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { listExperiments } from './api';
import { every } from './poll';
import type { IExperimentSummary } from './wire';

export const DEFAULT_REFRESH_S = 2;

export class ExperimentsModel {
  private _experiments: IExperimentSummary[] = [];
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
  private _poll: Poll;

  constructor(refreshSeconds = DEFAULT_REFRESH_S) {
    this._poll = every(refreshSeconds, 'jupyter-dist:experiments', () =>
      this._fetch()
    );
  }

  /** Newest first. */
  get experiments(): IExperimentSummary[] {
    return this._experiments;
  }

  /** Why the last fetch failed, or null. */
  get error(): string | null {
    return this._error;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Fetch now (the palette's "Experiments: Refresh"). */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  set refreshSeconds(seconds: number) {
    this._poll.frequency = {
      ...this._poll.frequency,
      interval: seconds * 1000
    };
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _fetch(): Promise<void> {
    try {
      const list = await listExperiments();
      this._experiments = list.experiments;
      this._error = null;
    } catch (reason) {
      this._error = String(reason);
      this._changed.emit();
      throw reason; // the poll backs off
    }
    this._changed.emit();
  }
}
