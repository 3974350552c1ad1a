/**
 * One experiment, opened from the panel in the main area. Polls the server while the experiment runs (the
 * detail, then the metrics and the utilisation samples after their cursors); a finished one is fetched once.
 */

import { Poll } from '@lumino/polling';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import {
  getCurves,
  getExperiment,
  getImportances,
  getLogs,
  getTrials,
  getUtilization
} from './api';
import { MAX_SEGMENT_CURVES } from './chart';
import { CURVE_POINTS, Curves } from './curves';
import { ExperimentDisplay, joinLogs } from './display';
import { sortTrials } from './ordering';
import { TrialPages } from './paging';
import { every } from './poll';
import { curveSelection } from './selection';
import { Utilization, UtilizationSection } from './utilization';
import type { IExperimentDetail } from './wire';

/** Draws an experiment: its detail, its curves (null while they are being read) and what its trials used. */
export type Drawer = (
  detail: IExperimentDetail,
  curves: Curves | null,
  curvesChanged: boolean,
  usage: Utilization
) => void;

// A page of utilisation samples holds up to 10,000 (the server's MAX_PAGE): a poll reads at most this many pages,
// and a live run's next poll reads on from where it stopped. A finished run is read once: past 100,000 samples
// (about 28 trial-hours) its chart leaves the later ones out, rather than load megabytes it thins away.
const USAGE_PAGES_PER_POLL = 10;

/**
 * One experiment as the server has it, read again at each poll. The first poll draws the detail as soon as it
 * comes, then reads the curves the view can draw in one request (GET .../curves, thinned: an experiment of a
 * million reports opens in one answer, not a hundred pages) and draws again; later polls read every trial's
 * points reported after the curves' cursor, as they arrive.
 */
export class ExperimentFeed {
  /** The utilisation samples read so far (each trial's thinned: utilization.ts). */
  readonly usage = new Utilization();
  private _curves: Curves | null = null;
  private _pages: TrialPages;
  private _sent: IExperimentDetail | null = null; // the latest detail as the server sent it

  constructor(readonly id: string) {
    this._pages = new TrialPages(offset => getTrials(id, offset));
  }

  /** Whether the trials listed leave some out (the detail lists its first page: "Load more" reads the next). */
  get hasMore(): boolean {
    return this._sent !== null && this._pages.hasMore(this._sent);
  }

  /** Read the next page of trials and draw the experiment with it. */
  async loadMore(draw: Drawer): Promise<void> {
    const sent = this._sent;
    if (!sent) {
      return;
    }
    await this._pages.next(sent);
    draw(this._pages.listed(sent), this._curves, false, this.usage);
  }

  /** One poll: the detail, drawn with ``draw`` (twice the first time); the detail. */
  async poll(draw: Drawer): Promise<IExperimentDetail> {
    const sent = await getExperiment(this.id);
    this._sent = sent;
    const detail = this._pages.listed(sent);
    if (!this._curves) {
      draw(detail, null, true, this.usage);
      // A PBT run's chart draws its segments in the order they ran, the newest MAX_SEGMENT_CURVES.
      const selection =
        detail.kind === 'pbt'
          ? curveSelection(
              [...detail.trials].sort((a, b) => b.trial_id - a.trial_id),
              MAX_SEGMENT_CURVES
            )
          : curveSelection(
              sortTrials(detail.trials, detail.metric ? detail.mode : null),
              undefined,
              detail.trial_count
            );
      const curves = Curves.fromSnapshot(
        await getCurves(this.id, selection, CURVE_POINTS)
      );
      curves.metric ??= detail.metric;
      this._curves = curves;
      // Read after the detail: a run that had ended then has all its reports in them.
      if (detail.state !== 'running') {
        await this._readUsage();
        draw(detail, curves, true, this.usage);
        return detail;
      }
      await Promise.all([this._readOn(), this._readUsage()]);
      draw(detail, curves, true, this.usage);
      return detail;
    }
    const [changed] = await Promise.all([this._readOn(), this._readUsage()]);
    draw(detail, this._curves, changed, this.usage);
    return detail;
  }

  /** The utilisation samples after the cursor: a page, and the pages waiting past it (up to a bound). */
  private async _readUsage(): Promise<void> {
    for (let i = 0; i < USAGE_PAGES_PER_POLL; i++) {
      const page = await getUtilization(this.id, this.usage.cursor);
      this.usage.add(page);
      if (!page.more) {
        return;
      }
    }
  }

  /** Every trial's points reported after the cursor; whether a curve changed. */
  private async _readOn(): Promise<boolean> {
    const curves = this._curves as Curves;
    return curves.addCurves(
      await getCurves(this.id, null, curves.points, curves.cursor)
    );
  }
}

export class ExperimentView extends Widget {
  private _display: ExperimentDisplay;
  private _usage = new UtilizationSection();
  private _feed: ExperimentFeed;
  private _poll: Poll;

  constructor(
    readonly experimentId: string,
    refreshSeconds: number
  ) {
    super();
    this.addClass('jd-detail');
    this.title.label = experimentId;
    this.title.closable = true;
    this._display = new ExperimentDisplay(
      async trialId => joinLogs(await getLogs(experimentId, trialId)),
      () => getImportances(experimentId),
      {
        hasMore: () => this._feed.hasMore,
        next: () =>
          this._feed.loadMore((d, curves, changed, usage) =>
            this._draw(d, curves, changed, usage)
          )
      }
    );
    this._display.addSection(this._usage.node);
    this.node.append(this._display.node);
    this._feed = new ExperimentFeed(experimentId);
    this._poll = every(
      refreshSeconds,
      `jupyter-dist:experiment:${experimentId}`,
      () => this._fetch()
    );
  }

  dispose(): void {
    this._poll.dispose();
    this._display.dispose();
    this._usage.dispose();
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    this._display.resize();
    this._usage.resize();
  }

  protected onAfterShow(msg: Message): void {
    this._display.resize();
    this._usage.resize();
  }

  private async _fetch(): Promise<void> {
    const detail = await this._feed.poll((d, curves, changed, usage) =>
      this._draw(d, curves, changed, usage)
    );
    if (detail.state !== 'running') {
      this._poll.dispose(); // finished: nothing more will come
    }
  }

  private _draw(
    d: IExperimentDetail,
    curves: Curves | null,
    changed: boolean,
    usage: Utilization
  ): void {
    this.title.label = `${d.kind} ${d.name}`;
    this._display.draw(d, curves, changed, usage);
    if (curves) {
      this._usage.draw(d, usage); // (read with the curves: before, nothing is)
    }
  }
}
