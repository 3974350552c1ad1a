/**
 * What one experiment looks like, wherever it is shown: the main-area view opened from the panel, and the
 * output of the cell that runs it (live, and in the saved notebook). It draws from data (an experiment's
 * detail and its learning curves) and fetches nothing itself.
 */

import { Clipboard } from '@jupyterlab/apputils';

import { ablationRows } from './ablation';
import { CurveChart, ObjectiveChart } from './chart';
import { Curves } from './curves';
import { h, replaceChildren } from './dom';
import {
  earlyStoppingNote,
  formatDuration,
  formatParam,
  formatValue,
  paramsAsPython,
  progressText,
  trialDuration,
  trialState,
  trialValue
} from './format';
import { bestTrial, paramNames, sortByColumn, sortTrials } from './ordering';
import { spaceOf } from './geometry';
import { ImportanceChart } from './importances';
import { ParallelChart } from './parallel';
import type {
  IExperimentDetail,
  IParamImportances,
  ITrialSummary,
  Mode
} from './wire';

/** Reads one trial's output when its row is clicked. */
export type LogsReader = (trialId: number) => Promise<string>;
/** Reads an HPO run's parameter importances (from the server) when a trial has ended. */
export type ImportancesReader = () => Promise<IParamImportances>;

export class ExperimentDisplay {
  readonly node = h('div', { class: 'jd-display' });
  private _header = h('div', { class: 'jd-detail-header' });
  private _actions = h('span', { class: 'jd-actions' });
  private _best = h('div', { class: 'jd-best' });
  private _chart = new CurveChart();
  private _objective = new ObjectiveChart();
  private _objectiveTitle = h('h3', {}, 'Objective by trial');
  private _parallel = new ParallelChart();
  private _parallelTitle = h('h3', {}, 'Parameters of the completed trials');
  private _importances = new ImportanceChart();
  private _ablation = h('div', { class: 'jd-ablation' });
  private _result = h('div', { class: 'jd-result' });
  private _table = h('div', { class: 'jd-trials' });
  private _sort: { column: string; ascending: boolean } | null = null; // null: best first
  private _endedKey = '';
  private _output = h('pre', { class: 'jd-output' });
  // What the trials table shows, kept for the redraws a click on a header or a row makes between two draws.
  private _shown: {
    detail: IExperimentDetail;
    bestFirst: ITrialSummary[];
    metric: string;
  } | null = null;
  private _selected: number | null = null;

  constructor(
    private _readLogs: LogsReader | null,
    private _readImportances: ImportancesReader | null = null
  ) {
    this.node.append(
      this._header,
      this._best,
      this._result,
      this._ablation,
      this._chart.node,
      this._objectiveTitle,
      this._objective.node,
      this._parallelTitle,
      this._parallel.node,
      this._importances.node,
      h('h3', {}, 'Trials'),
      this._table
    );
    if (_readLogs) {
      this._output.textContent = 'Click a trial to see what it printed.';
      this.node.append(h('h3', {}, 'Output'), this._output);
    }
  }

  /** Where a caller puts its buttons (the cell's Stop). */
  get actions(): HTMLElement {
    return this._actions;
  }

  draw(given: IExperimentDetail, curves: Curves, curvesChanged = true): void {
    // Nothing optimised (a data-parallel run): no direction, so no "best" and trials in id order. The store
    // keeps a direction for every run, so this is decided here, once, for every part of the view.
    const detail = given.metric ? given : { ...given, mode: null };
    const trials = sortTrials(detail.trials, detail.mode);
    // The metric column: the objective, or (a data-parallel run has none) the metric the curves draw.
    const metric = detail.metric ?? curves.metric ?? 'value';
    this._shown = { detail, bestFirst: trials, metric };
    const earlyStopping = earlyStoppingNote(detail);
    replaceChildren(
      this._header,
      h('span', { class: 'jd-detail-name' }, `${detail.kind} ${detail.name}`),
      h('span', { class: `jd-state jd-state-${detail.state}` }, detail.state),
      h(
        'span',
        { class: 'jd-detail-meta' },
        `${progressText(detail)} trials · ${formatDuration(detail.duration)}`
      ),
      earlyStopping
        ? h(
            'span',
            { class: 'jd-detail-meta jd-early-stopping' },
            earlyStopping
          )
        : null,
      this._actions,
      dashboard(detail.definition.dashboard_link),
      detail.error ? h('pre', { class: 'jd-error' }, detail.error) : null,
      // A planned end's note (a target reached): what happened, not an error.
      !detail.error && detail.message
        ? h('div', { class: 'jd-detail-meta jd-message' }, detail.message)
        : null
    );
    this._drawBest(detail, trials);
    this._drawAblation(detail);
    // A data-parallel run returns a value (rank 0's): shown as the kernel's repr of it.
    const returned = detail.kind === 'ddp' ? detail.trials[0]?.result : null;
    replaceChildren(
      this._result,
      returned ? h('h3', {}, 'Returned (rank 0)') : null,
      returned ? h('pre', { class: 'jd-output' }, returned) : null
    );
    const objective = detail.kind === 'hpo' && detail.metric && detail.mode;
    for (const node of [
      this._objectiveTitle,
      this._objective.node,
      this._parallelTitle,
      this._parallel.node,
      this._importances.node
    ]) {
      node.hidden = !objective;
    }
    // Redrawn when a trial has ended, not at every poll (they only change then).
    const ended = `${detail.trials.length}:${detail.trials_done}:${detail.state}`;
    if (objective && ended !== this._endedKey) {
      this._endedKey = ended;
      const metric = detail.metric as string;
      const mode = detail.mode as Mode;
      this._objective.draw(detail.trials, metric, mode);
      this._parallel.draw(
        detail.trials,
        spaceOf(detail.definition.space ?? {}, detail.trials),
        metric,
        mode
      );
      if (this._readImportances) {
        // They change only as trials complete. No answer (no server: a saved notebook reopened) leaves what
        // is drawn, e.g. the importances the kernel saved with the run.
        this._readImportances().then(
          report => this.drawImportances(report),
          () => undefined
        );
      }
    }
    if (curvesChanged) {
      // Best first, then the running ones: the curves that matter are drawn (and coloured) first.
      const drawn = new Set(curves.trialIds());
      this._chart.draw(
        curves,
        trials.map(t => t.trial_id).filter(id => drawn.has(id))
      );
    }
    this._drawTable();
  }

  /** The parameter importances (an HPO run's), or none. */
  drawImportances(report: IParamImportances | null): void {
    this._importances.draw(report);
  }

  resize(): void {
    this._chart.resize(this._chart.node.clientWidth);
    this._objective.resize(this._objective.node.clientWidth);
  }

  dispose(): void {
    this._chart.dispose();
    this._objective.dispose();
  }

  /** An ablation study: each component's impact as a bar (positive: the objective is worse without it). */
  private _drawAblation(d: IExperimentDetail): void {
    if (d.kind !== 'ablation') {
      replaceChildren(this._ablation);
      return;
    }
    const rows = ablationRows(d.trials, d.mode);
    const largest = Math.max(1e-12, ...rows.map(r => Math.abs(r.impact ?? 0)));
    replaceChildren(
      this._ablation,
      h('h3', {}, `Impact on ${d.metric} of leaving each one out`),
      ...rows.map(r => {
        const share = Math.abs(r.impact ?? 0) / largest;
        const bar = h('span', {
          class: `jd-bar ${r.impact !== null && r.impact < 0 ? 'jd-bar-negative' : ''}`
        });
        bar.style.width = `${(share * 100).toFixed(1)}%`;
        return h(
          'div',
          { class: 'jd-ablation-row', 'data-component': r.component },
          h('span', { class: 'jd-ablation-name' }, r.component),
          h('span', { class: 'jd-bar-track' }, bar),
          h(
            'span',
            { class: 'jd-ablation-value' },
            r.kind === 'baseline'
              ? `${formatValue(r.mean)} (baseline)`
              : r.impact === null
                ? 'no run finished'
                : `${r.impact >= 0 ? '+' : ''}${formatValue(r.impact)}`
          )
        );
      })
    );
  }

  private _drawBest(d: IExperimentDetail, trials: ITrialSummary[]): void {
    const best = bestTrial(trials, d.mode);
    if (!best) {
      replaceChildren(this._best);
      return;
    }
    const copy = h(
      'button',
      {
        class: 'jp-Button jp-mod-styled jp-mod-accept jd-copy',
        title: 'Copy the best parameters as Python keyword arguments'
      },
      'Copy'
    );
    copy.onclick = () => {
      Clipboard.copyToSystem(paramsAsPython(best.params));
      copy.textContent = 'Copied';
    };
    replaceChildren(
      this._best,
      h(
        'span',
        {},
        `best ${d.metric}=${formatValue(best.value)} (trial ${best.trial_id}): `
      ),
      h('code', {}, paramsAsPython(best.params)),
      copy
    );
  }

  private _drawTable(): void {
    if (!this._shown) {
      return;
    }
    const { detail: d, bestFirst, metric } = this._shown;
    const labels = bestFirst.length ? Object.keys(bestFirst[0].labels) : [];
    const params = paramNames(d.trials);
    const best = bestTrial(bestFirst, d.mode);
    const sort = this._sort;
    const trials = sort
      ? sortByColumn(bestFirst, sort.column, metric, sort.ascending)
      : bestFirst;
    const now = Date.now() / 1000;
    const head = [
      'trial',
      ...labels,
      'state',
      metric,
      ...params,
      'steps',
      'duration'
    ];
    const rows = trials.map(t => {
      // A running trial shows its latest value and how long it has run so far (a queued one: nothing yet).
      const value = trialValue(t, metric);
      const state = trialState(t);
      const row = h(
        'tr',
        {
          class:
            [
              t === best ? 'jd-best-row' : '',
              t.trial_id === this._selected ? 'jd-selected' : ''
            ]
              .join(' ')
              .trim() || undefined,
          'data-trial': String(t.trial_id)
        },
        h('td', {}, String(t.trial_id)),
        ...labels.map(l => h('td', {}, formatParam(t.labels[l]))),
        h(
          'td',
          { class: `jd-state-${state}` },
          t.resumed_from === null || t.resumed_from === undefined
            ? state
            : `${state} · resumed from step ${t.resumed_from}`
        ),
        h('td', {}, formatValue(value)),
        ...params.map(p =>
          h('td', {}, p in t.params ? formatParam(t.params[p]) : '')
        ),
        h('td', {}, String(t.steps)),
        h('td', {}, formatDuration(trialDuration(t, now)))
      );
      if (this._readLogs) {
        row.onclick = () => void this._showOutput(t.trial_id);
      }
      return row;
    });
    replaceChildren(
      this._table,
      h(
        'table',
        { class: 'jd-table' },
        h(
          'thead',
          {},
          h('tr', {}, ...head.map(name => this._headerCell(name)))
        ),
        h('tbody', {}, ...rows)
      )
    );
  }

  /** A column's header: a click sorts by it, a second click reverses, a third goes back to best first. */
  private _headerCell(name: string): HTMLElement {
    const sort = this._sort;
    const mark = sort?.column === name ? (sort.ascending ? ' ▲' : ' ▼') : '';
    const cell = h('th', { title: 'Sort by this column' }, name + mark);
    cell.onclick = () => {
      if (sort?.column !== name) {
        this._sort = { column: name, ascending: true };
      } else if (sort.ascending) {
        this._sort = { column: name, ascending: false };
      } else {
        this._sort = null;
      }
      this._drawTable();
    };
    return cell;
  }

  private async _showOutput(trialId: number): Promise<void> {
    this._selected = trialId;
    this._drawTable();
    const text = await (this._readLogs as LogsReader)(trialId);
    this._output.textContent = text || `Trial ${trialId} printed nothing.`;
  }
}

/** The Dask dashboard link (the scheduler's own address: see the README for reaching it from afar). */
function dashboard(link: string | null | undefined): HTMLElement | null {
  if (!link) {
    return null;
  }
  return h(
    'a',
    { class: 'jd-dashboard', href: link, target: '_blank', rel: 'noopener' },
    'Dask dashboard'
  );
}

/** A trial's output as one text: stdout, stderr, then the traceback. */
export function joinLogs(logs: {
  stdout: string;
  stderr: string;
  error: string | null;
}): string {
  return [logs.stdout, logs.stderr, logs.error ?? ''].filter(p => p).join('\n');
}
