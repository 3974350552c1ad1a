/**
 * One experiment, opened from the panel in the main area. Polls the server while the experiment runs (the
 * detail, then the metrics after the last cursor); a finished one is fetched once.
 */

import { Poll } from '@lumino/polling';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { getExperiment, getImportances, getLogs, getMetrics } from './api';
import { Curves } from './curves';
import { ExperimentDisplay, joinLogs } from './display';
import { every } from './poll';
import type { IExperimentDetail } from './wire';

/**
 * Fetch an experiment's detail and every metric after ``curves.cursor`` (new curves of its metric when none
 * are given); whether a curve changed.
 */
export async function fetchExperiment(
  id: string,
  known: Curves | null
): Promise<{ detail: IExperimentDetail; curves: Curves; changed: boolean }> {
  const detail = await getExperiment(id);
  const curves = known ?? new Curves(detail.metric);
  let changed = false;
  for (;;) {
    const page = await getMetrics(id, curves.cursor);
    changed = curves.add(page) || changed;
    if (!page.more) {
      return { detail, curves, changed };
    }
  }
}

export class ExperimentView extends Widget {
  private _display: ExperimentDisplay;
  private _curves: Curves | null = null;
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
    const { detail, curves, changed } = await fetchExperiment(
      this.experimentId,
      this._curves
    );
    this._curves = curves;
    this.title.label = `${detail.kind} ${detail.name}`;
    this._display.draw(detail, curves, changed);
    if (detail.state !== 'running') {
      this._poll.dispose(); // finished: nothing more will come
    }
  }
}
