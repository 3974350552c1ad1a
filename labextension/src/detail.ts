/**
 * One experiment, opened from the panel in the main area. Polls the server while the experiment runs (the
 * detail, then the metrics after the last cursor); a finished one is fetched once.
 */

import { Poll } from '@lumino/polling';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { getCurves, getExperiment, getImportances, getLogs } from './api';
import { MAX_SEGMENT_CURVES } from './chart';
import { CURVE_POINTS, Curves } from './curves';
import { ExperimentDisplay, joinLogs } from './display';
import { sortTrials } from './ordering';
import { every } from './poll';
import { curveSelection } from './selection';
import type { IExperimentDetail } from './wire';

/** Draws an experiment: its detail, and its curves (null while they are being read). */
export type Drawer = (
  detail: IExperimentDetail,
  curves: Curves | null,
  curvesChanged: boolean
) => void;

/**
 * One experiment as the server has it, read again at each poll. The first poll draws the detail as soon as it
 * comes, then reads the curves the view can draw in one request (GET .../curves, thinned: an experiment of a
 * million reports opens in one answer, not a hundred pages) and draws again; later polls read every trial's
 * points reported after the curves' cursor, as they arrive.
 */
export class ExperimentFeed {
  private _curves: Curves | null = null;

  constructor(readonly id: string) {}

  /** One poll: the detail, drawn with ``draw`` (twice the first time); the detail. */
  async poll(draw: Drawer): Promise<IExperimentDetail> {
    const detail = await getExperiment(this.id);
    if (!this._curves) {
      draw(detail, null, true);
      // A PBT run's chart draws its segments in the order they ran, the newest MAX_SEGMENT_CURVES.
      const selection =
        detail.kind === 'pbt'
          ? curveSelection(
              [...detail.trials].sort((a, b) => b.trial_id - a.trial_id),
              MAX_SEGMENT_CURVES
            )
          : curveSelection(
              sortTrials(detail.trials, detail.metric ? detail.mode : null)
            );
      const curves = Curves.fromSnapshot(
        await getCurves(this.id, selection, CURVE_POINTS)
      );
      curves.metric ??= detail.metric;
      this._curves = curves;
      // Read after the detail: a run that had ended then has all its reports in them.
      if (detail.state !== 'running') {
        draw(detail, curves, true);
        return detail;
      }
      await this._readOn();
      draw(detail, curves, true);
      return detail;
    }
    draw(detail, this._curves, await this._readOn());
    return detail;
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
      () => getImportances(experimentId)
    );
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
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    this._display.resize();
  }

  protected onAfterShow(msg: Message): void {
    this._display.resize();
  }

  private async _fetch(): Promise<void> {
    const detail = await this._feed.poll((d, curves, changed) => {
      this.title.label = `${d.kind} ${d.name}`;
      this._display.draw(d, curves, changed);
    });
    if (detail.state !== 'running') {
      this._poll.dispose(); // finished: nothing more will come
    }
  }
}
