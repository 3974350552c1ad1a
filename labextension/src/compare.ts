/**
 * Experiments side by side, opened from the panel with several picked: what ``jupyter_dist.compare`` shows in the
 * notebook, from the server's comparison (GET /jupyter-dist/api/compare, computed as the kernel computes it): a
 * row each (the columns of ``Comparison.summary``), each one's best value so far by completed trial and by wall
 * time, and the importances of the HPO runs' parameters side by side. Asked again while one of them runs.
 */

import { Poll } from '@lumino/polling';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { getComparison } from './api';
import { BestSoFarChart, ILabelledLine, lineColour } from './chart';
import { h, replaceChildren } from './dom';
import { formatDuration, formatParam, formatValue } from './format';
import { ImportanceChart } from './importances';
import { every } from './poll';
import type { IComparedExperiment, IExperimentComparison } from './wire';

/** The summary table's columns: Comparison.summary's (store/_comparison.py SUMMARY_COLUMNS). */
export const SUMMARY_COLUMNS = [
  'name',
  'kind',
  'state',
  'trials',
  'best_value',
  'best_params',
  'duration',
  'started'
];

/** Each experiment's label in the charts: its name, with its id where another compared one has the same name. */
export function labelsOf(experiments: IComparedExperiment[]): string[] {
  const count = new Map<string, number>();
  experiments.forEach(e => count.set(e.name, (count.get(e.name) ?? 0) + 1));
  return experiments.map(e =>
    (count.get(e.name) as number) > 1 ? `${e.name} (${e.id})` : e.name
  );
}

/** Each experiment's best value so far, over its completed trials (1, 2, ...) or over seconds from its start. */
export function comparisonLines(
  experiments: IComparedExperiment[],
  by: 'trial' | 'time'
): ILabelledLine[] {
  const labels = labelsOf(experiments);
  return experiments.map((e, i) => ({
    label: labels[i],
    xs: by === 'trial' ? e.best_so_far.map((_, n) => n + 1) : e.ended,
    ys: e.best_so_far
  }));
}

/** The y axes' label: the experiments' metrics, each once (as Comparison.plot() writes it). */
export function metricsLabel(experiments: IComparedExperiment[]): string {
  const metrics = [
    ...new Set(experiments.flatMap(e => (e.metric ? [e.metric] : [])))
  ].sort();
  return metrics.join(', ') || 'value';
}

/** An experiment's row of the summary table, as text, in SUMMARY_COLUMNS' order. */
export function summaryCells(e: IComparedExperiment): string[] {
  const started = new Date(e.started * 1000);
  return [
    e.name,
    e.kind,
    e.state,
    e.trials.toLocaleString('en-US'),
    formatValue(e.best_value),
    e.best_params === null
      ? '–'
      : Object.entries(e.best_params)
          .map(([name, value]) => `${name}=${formatParam(value)}`)
          .join(', '),
    formatDuration(e.duration),
    `${started.toLocaleDateString()} ${started.toLocaleTimeString()}`
  ];
}

export class ComparisonView extends Widget {
  private _header = h('div', { class: 'jd-detail-header' });
  private _table = h('table', { class: 'jd-table jd-compare-table' });
  private _byTrial = new BestSoFarChart('jd-compare-by-trial');
  private _byTime = new BestSoFarChart('jd-compare-by-time');
  private _importances = h('div', { class: 'jd-compare-importances' });
  private _poll: Poll;

  constructor(
    readonly experimentIds: string[],
    refreshSeconds: number
  ) {
    super();
    this.addClass('jd-detail');
    this.addClass('jd-comparison');
    this.title.label = `Compare ${experimentIds.length} experiments`;
    this.title.closable = true;
    this.node.append(
      this._header,
      this._table,
      // Side by side, as Comparison.plot() draws them.
      h(
        'div',
        { class: 'jd-compare-charts' },
        h(
          'div',
          {},
          h('h3', {}, 'Best so far, by completed trial'),
          this._byTrial.node
        ),
        h(
          'div',
          {},
          h('h3', {}, 'Best so far, by wall time'),
          this._byTime.node
        )
      ),
      this._importances
    );
    this._poll = every(
      refreshSeconds,
      `jupyter-dist:compare:${experimentIds.join(',')}`,
      () => this._fetch()
    );
  }

  dispose(): void {
    this._poll.dispose();
    this._byTrial.dispose();
    this._byTime.dispose();
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    this._resize();
  }

  protected onAfterShow(msg: Message): void {
    this._resize();
  }

  /** Draw the comparison (the charts anew: a comparison has a few short lines). */
  draw(comparison: IExperimentComparison): void {
    const experiments = comparison.experiments;
    const names = labelsOf(experiments);
    this.title.label = `Compare ${names.join(', ')}`;
    replaceChildren(
      this._header,
      h('span', { class: 'jd-detail-name' }, 'Comparison'),
      h(
        'span',
        { class: 'jd-detail-meta' },
        `${experiments.length} experiments`
      )
    );
    replaceChildren(
      this._table,
      h('thead', {}, h('tr', {}, ...SUMMARY_COLUMNS.map(c => h('th', {}, c)))),
      h('tbody', {}, ...experiments.map((e, i) => this._row(e, names[i], i)))
    );
    const label = metricsLabel(experiments);
    this._byTrial.draw(
      'completed trials',
      label,
      comparisonLines(experiments, 'trial'),
      true
    );
    this._byTime.draw(
      'seconds from its start',
      label,
      comparisonLines(experiments, 'time'),
      false
    );
    this._drawImportances(experiments, names);
  }

  private _row(e: IComparedExperiment, label: string, index: number) {
    const cells = summaryCells(e).map((text, i) =>
      h(
        'td',
        i === 2 ? { class: `jd-state-${e.state}` } : { title: text },
        i === 0 ? h('span', { class: 'jd-compare-swatch' }) : null,
        i === 0 ? label : text
      )
    );
    const row = h('tr', { 'data-id': e.id }, ...cells);
    row.style.setProperty('--jd-line-colour', lineColour(index));
    return row;
  }

  /** Each HPO run's importances, side by side, under its name, its bars in its lines' colour. */
  private _drawImportances(
    experiments: IComparedExperiment[],
    names: string[]
  ): void {
    const columns = experiments.flatMap((e, i) => {
      if (!e.importances) {
        return [];
      }
      const chart = new ImportanceChart();
      chart.draw(e.importances);
      const column = h(
        'div',
        { class: 'jd-compare-importance', 'data-id': e.id },
        h('h4', {}, h('span', { class: 'jd-compare-swatch' }), names[i]),
        chart.node
      );
      column.style.setProperty('--jd-line-colour', lineColour(i));
      return [column];
    });
    replaceChildren(this._importances, ...columns);
  }

  private _resize(): void {
    this._byTrial.resize(this._byTrial.node.clientWidth);
    this._byTime.resize(this._byTime.node.clientWidth);
  }

  private async _fetch(): Promise<void> {
    let comparison: IExperimentComparison;
    try {
      comparison = await getComparison(this.experimentIds);
    } catch (reason) {
      replaceChildren(
        this._header,
        h('div', { class: 'jd-message' }, `Cannot compare them: ${reason}`)
      );
      throw reason; // the poll backs off
    }
    this.draw(comparison);
    if (!comparison.experiments.some(e => e.state === 'running')) {
      this._poll.dispose(); // all of them ended: nothing more will come
    }
  }
}
