/** The Experiments panel in the left sidebar: every stored experiment, newest first, live. */

import { Widget } from '@lumino/widgets';

import { h, replaceChildren } from './dom';
import { ExperimentsModel } from './experiments';
import { formatDuration, formatValue, progressText } from './format';
import type { IExperimentSummary } from './wire';

export class ExperimentsPanel extends Widget {
  private _list = h('div', { class: 'jd-list' });
  private _message = h('div', { class: 'jd-message' });

  constructor(
    readonly model: ExperimentsModel,
    private _open: (experiment: IExperimentSummary) => void
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
    this.node.append(
      h(
        'div',
        { class: 'jd-panel-header' },
        h('h2', {}, 'Experiments'),
        refresh
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

  private _draw(): void {
    const experiments = this.model.experiments;
    this._message.textContent = this.model.error
      ? `Cannot read the experiments: ${this.model.error}`
      : experiments.length
        ? ''
        : 'No experiments yet. Run a %%distribute cell (or jupyter_dist.hpo) and it appears here.';
    replaceChildren(this._list, ...experiments.map(e => this._item(e)));
  }

  private _item(e: IExperimentSummary): HTMLElement {
    const started = new Date(e.started * 1000);
    const item = h(
      'div',
      { class: 'jd-item', 'data-id': e.id, title: e.id },
      h(
        'div',
        { class: 'jd-item-line' },
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
    item.onclick = () => this._open(e);
    return item;
  }
}
