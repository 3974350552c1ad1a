/**
 * The output of a cell that runs an experiment (MIME type application/vnd.jupyter-dist.experiment+json): a
 * "starting…" line from the first instant, then the live view, followed through the server's REST API (not
 * through the kernel: the kernel sends a few small messages per run, never a figure), then the final view the
 * kernel saved in the output, which a reopened notebook shows with no kernel and no server.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { getImportances, getLogs, getTrials, requestStop } from './api';
import { Curves } from './curves';
import { Drawer, ExperimentFeed } from './detail';
import { ExperimentDisplay, IMoreTrials, joinLogs } from './display';
import { h } from './dom';
import { formatDuration } from './format';
import { inParamOrder } from './ordering';
import { TrialPages } from './paging';
import { every } from './poll';
import type { IExperimentBundle } from './wire';

export const MIME_TYPE = 'application/vnd.jupyter-dist.experiment+json';
const LIVE_REFRESH_S = 1;

export class ExperimentRenderer
  extends Widget
  implements IRenderMime.IRenderer
{
  private _display: ExperimentDisplay | null = null;
  private _phase = h('div', { class: 'jd-phase' });
  private _phaseText = '';
  private _phaseStarted: number | null = null;
  private _poll: Poll | null = null;
  private _ticker: number | null = null;
  private _stop: HTMLButtonElement | null = null;
  private _stopping = false;
  private _ended = false;
  // The trials past those listed: read from the server, for the live run and for a saved snapshot alike.
  private _pages: IMoreTrials | null = null;

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jd-cell-view');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const bundle = model.data[MIME_TYPE] as unknown as IExperimentBundle;
    if (bundle.snapshot) {
      this._finish();
      // Importances the kernel saved are the run's last: the server is asked only for a run it saved none of
      // (an HPO run of an earlier version), or when this view followed the run live (its final ask).
      const display = this._ensureDisplay(
        bundle.snapshot.id,
        false,
        !bundle.importances
      );
      const snapshot = bundle.snapshot;
      const curves = Curves.fromSnapshot(
        bundle.curves ?? { metric: snapshot.metric, trials: [] }
      );
      // The snapshot lists the run's best trials; the next ones come from the server's store, where there is one.
      const pages = new TrialPages(offset => getTrials(snapshot.id, offset));
      this._pages = {
        hasMore: () => pages.hasMore(snapshot),
        next: async () => {
          await pages.next(snapshot);
          display.draw(
            inParamOrder(pages.listed(snapshot), bundle.param_order),
            curves,
            false
          );
        }
      };
      display.draw(inParamOrder(snapshot, bundle.param_order), curves);
      display.drawImportances(bundle.importances ?? null);
      return;
    }
    if (bundle.id) {
      this._follow(bundle.id);
      return;
    }
    this._showPhase(bundle.phase ?? 'starting…', bundle.started);
  }

  dispose(): void {
    this._finish();
    this._display?.dispose();
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    this._display?.resize();
  }

  private _showPhase(phase: string, started?: number): void {
    if (!this._phase.isConnected) {
      this.node.replaceChildren(this._phase);
    }
    // The ticker reads the latest phase: a new one replaces the text, not a second ticker.
    this._phaseText = phase;
    this._phaseStarted = started ?? null;
    const draw = () => {
      const since = this._phaseStarted;
      const elapsed =
        since !== null ? ` ${formatDuration(Date.now() / 1000 - since)}` : '';
      this._phase.textContent = `${this._phaseText}${elapsed}`;
    };
    draw();
    if (this._ticker === null) {
      this._ticker = window.setInterval(draw, 1000);
    }
  }

  private _ensureDisplay(
    id: string,
    live: boolean,
    askImportances = true
  ): ExperimentDisplay {
    if (this._ticker !== null) {
      window.clearInterval(this._ticker);
      this._ticker = null;
    }
    if (!this._display) {
      // Trial output comes from the server, so only where one serves it (not in a notebook opened without it:
      // the table is still there).
      this._display = new ExperimentDisplay(
        async trialId => joinLogs(await getLogs(id, trialId)),
        askImportances ? () => getImportances(id) : null,
        {
          hasMore: () => this._pages?.hasMore() ?? false,
          next: () => this._pages?.next() ?? Promise.resolve()
        }
      );
      this.node.replaceChildren(this._display.node);
    }
    if (live && !this._stop) {
      const stop = h(
        'button',
        {
          class: 'jp-Button jp-mod-styled jp-mod-warn jd-stop',
          title:
            'Stop the experiment: running trials end, finished ones are kept'
        },
        'Stop'
      ) as HTMLButtonElement;
      stop.onclick = () => void this._requestStop(id);
      this._stop = stop;
    }
    if (this._stop) {
      this._display.actions.replaceChildren(this._stop);
    }
    return this._display;
  }

  private _follow(id: string): void {
    if (this._poll || this._ended) {
      return; // already following; or the run has ended and only the kernel's final snapshot is to come
    }
    this._ensureDisplay(id, true);
    const feed = new ExperimentFeed(id);
    const draw: Drawer = (d, curves, changed, usage) => {
      if (!this._poll) {
        return; // the kernel's final snapshot came meanwhile: it is what the cell shows
      }
      const display = this._ensureDisplay(id, d.state === 'running');
      if (this._stopping && this._stop) {
        this._stop.textContent = 'Stopping…';
      }
      display.draw(d, curves, changed, usage);
    };
    this._pages = {
      hasMore: () => feed.hasMore,
      next: () => feed.loadMore(draw)
    };
    this._poll = every(
      LIVE_REFRESH_S,
      `jupyter-dist:cell:${id}`,
      async () => {
        const detail = await feed.poll(draw);
        if (detail.state !== 'running') {
          // Ended (the kernel's final snapshot follows; a kernel that died leaves "interrupted"): no more
          // polling, and no Stop.
          this._ended = true;
          this._finish();
        }
      },
      10
    );
  }

  private async _requestStop(id: string): Promise<void> {
    if (!this._stop || this._stopping) {
      return;
    }
    this._stopping = true;
    this._stop.disabled = true;
    this._stop.textContent = 'Stopping…';
    try {
      await requestStop(id);
    } catch (reason) {
      this._stopping = false;
      this._stop.disabled = false;
      this._stop.textContent = 'Stop';
      this._stop.title = `The stop request failed: ${reason}`;
    }
  }

  /** The run ended (the kernel saved its final view): stop polling; the Stop button goes. */
  private _finish(): void {
    this._poll?.dispose();
    this._poll = null;
    if (this._ticker !== null) {
      window.clearInterval(this._ticker);
      this._ticker = null;
    }
    this._stop?.remove();
    this._stop = null;
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 0, // ahead of text/html (50): the fallback the bundle carries for other frontends
  createRenderer: options => new ExperimentRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'jupyter-dist:experiment-renderer',
  description: 'Draws an experiment in the output of the cell that runs it.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
