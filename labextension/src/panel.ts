/**
 * The Experiments panel in the left sidebar: every stored experiment, newest first, live. A click opens one;
 * several picked (Ctrl/Cmd-click, Shift-click, or their checkboxes: picking.ts) are compared side by side.
 */

import { Widget } from '@lumino/widgets';

import { h, replaceChildren } from './dom';
import { ExperimentsModel } from './experiments';
import { formatDuration, formatValue, progressText } from './format';
import {
  IHow,
  IPicking,
  NOTHING_PICKED,
  howClicked,
  pick,
  stillListed
} from './picking';
import type { IExperimentSummary } from './wire';

// The most experiments one comparison takes (the server's MAX_COMPARED, store/_reader.py).
export const MAX_COMPARED = 20;

export class ExperimentsPanel extends Widget {
  private _list = h('div', { class: 'jd-list' });
  private _message = h('div', { class: 'jd-message' });
  private _compareButton = h(
    'button',
    { class: 'jp-Button jp-mod-styled jp-mod-accept jd-compare' },
    'Compare'
  ) as HTMLButtonElement;
  private _picking: IPicking = NOTHING_PICKED;

  constructor(
    readonly model: ExperimentsModel,
    private _open: (experiment: IExperimentSummary) => void,
    private _compare: (experimentIds: string[]) => void = () => undefined
  ) {
    super();
    this.id = 'jupyter-dist-experiments';
    this.addClass('jd-panel');
    this.title.caption = 'Experiments';
    const refresh = h(
      'button',
      { class: 'jp-Button jp-mod-minimal jd-refresh', title: 'Refresh' },
      '⟳'
    );
    refresh.onclick = () => void model.refresh();
    this._compareButton.onclick = () => this._compare(this.picked);
    this.node.append(
      h(
        'div',
        { class: 'jd-panel-header' },
        h('h2', {}, 'Experiments'),
        h('span', { class: 'jd-panel-actions' }, this._compareButton, refresh)
      ),
      this._message,
      this._list
    );
    model.changed.connect(this._draw, this);
    this._draw();
  }

  dispose(): void {
    this.model.changed.disconnect(this._draw, this);
    super.dispose();
  }

  /** The ids of the picked experiments, newest first. */
  get picked(): string[] {
    return this._picking.picked;
  }

  private _draw(): void {
    const experiments = this.model.experiments;
    this._picking = stillListed(
      this._picking,
      experiments.map(e => e.id)
    );
    const count = this._picking.picked.length;
    this._compareButton.textContent =
      count > 1 ? `Compare ${count}` : 'Compare';
    this._compareButton.disabled = count < 2 || count > MAX_COMPARED;
    this._compareButton.title =
      count > MAX_COMPARED
        ? `Compare at most ${MAX_COMPARED} experiments at a time`
        : 'Compare the picked experiments side by side (Ctrl-click or Shift-click to pick several)';
    this._compareButton.hidden = !experiments.length;
    this._message.textContent = this.model.error
      ? `Cannot read the experiments: ${this.model.error}`
      : experiments.length
        ? ''
        : 'No experiments yet. Run a %%distribute cell (or jupyter_dist.hpo) and it appears here.';
    replaceChildren(this._list, ...experiments.map(e => this._item(e)));
  }

  /** A click on ``e``'s row (or checkbox, ``how``: toggle): a plain one also opens it. */
  private _pick(e: IExperimentSummary, how: IHow): void {
    const listed = this.model.experiments.map(x => x.id);
    this._picking = pick(this._picking, listed, e.id, how);
    this._draw();
    if (!how.toggle && !how.range) {
      this._open(e);
    }
  }

  private _item(e: IExperimentSummary): HTMLElement {
    const started = new Date(e.started * 1000);
    const picked = this._picking.picked.includes(e.id);
    const box = h('input', {
      type: 'checkbox',
      class: 'jd-pick',
      title: 'Pick it to compare',
      checked: picked
    }) as HTMLInputElement;
    box.onclick = event => {
      event.stopPropagation(); // not the row's click: it would open the experiment
      this._pick(e, { toggle: true });
    };
    const item = h(
      'div',
      {
        class: picked ? 'jd-item jd-item-picked' : 'jd-item',
        'data-id': e.id,
        title: e.id
      },
      h(
        'div',
        { class: 'jd-item-line' },
        box,
        h('span', { class: 'jd-item-name' }, e.name),
        h('span', { class: 'jd-kind' }, e.kind),
        h('span', { class: `jd-state jd-state-${e.state}` }, e.state)
      ),
      h(
        'div',
        { class: 'jd-item-line jd-item-meta' },
        h('span', { class: 'jd-progress' }, `${progressText(e)} trials`),
        e.best !== null
          ? h(
              'span',
              { class: 'jd-item-best' },
              `best ${e.metric} ${formatValue(e.best)}`
            )
          : null,
        h(
          'span',
          { title: started.toLocaleString() },
          `${started.toLocaleDateString()} ${started.toLocaleTimeString()} · ${formatDuration(e.duration)}`
        )
      )
    );
    item.onclick = event => this._pick(e, howClicked(event));
    return item;
  }
}
