/**
 * The trials a view lists of an experiment of any size: the detail's first page (best first) and its running
 * trials, then the pages a user asks for with "Load more" (GET .../trials), so an experiment of 100,000 trials
 * opens with a few hundred of them, not all.
 */

import type { IExperimentDetail, ITrialSummary, ITrialsPage } from './wire';

/** How many trials the experiment has in all (a snapshot saved before 0.5 does not say: its done ones). */
export function trialCount(d: IExperimentDetail): number {
  return Math.max(d.trial_count ?? d.trials_done, d.trials.length);
}

/**
 * ``detail`` with its running trials and ``more`` (pages read after its first) among its trials, each trial once:
 * the detail's own summaries, the newest, win.
 */
export function listedTrials(
  detail: IExperimentDetail,
  more: ITrialSummary[]
): IExperimentDetail {
  const running = detail.running ?? [];
  if (!more.length && !running.length) {
    return detail;
  }
  const byId = new Map<number, ITrialSummary>();
  for (const t of [...more, ...running, ...detail.trials]) {
    byId.set(t.trial_id, t);
  }
  return { ...detail, trials: [...byId.values()] };
}

/** Reads a page of trials from ``offset`` (best first). */
export type PageReader = (offset: number) => Promise<ITrialsPage>;

/** The pages of trials read after a detail's first, in order. */
export class TrialPages {
  private _more: ITrialSummary[] = [];

  constructor(private _read: PageReader) {}

  /** ``detail`` with the pages read so far (``listedTrials``). */
  listed(detail: IExperimentDetail): IExperimentDetail {
    return listedTrials(detail, this._more);
  }

  /** Whether ``detail`` (as the server sent it) leaves trials out that another page would list. */
  hasMore(detail: IExperimentDetail): boolean {
    return detail.trials.length + this._more.length < trialCount(detail);
  }

  /** Read the next page after ``detail``'s first and those read before. */
  async next(detail: IExperimentDetail): Promise<void> {
    const page = await this._read(detail.trials.length + this._more.length);
    this._more = [...this._more, ...page.trials];
  }
}
