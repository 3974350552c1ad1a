/**
 * What one experiment looks like, wherever it is shown: the main-area view opened from the panel, and the
 * output of the cell that runs it (live, and in the saved notebook). It draws from data (an experiment's
 * detail and its learning curves) and fetches nothing itself.
 */

import { Clipboard } from '@jupyterlab/apputils';

import { ablationRows } from './ablation';
import {
  CurveChart,
  HypervolumeChart,
  MAX_SEGMENT_CURVES,
  ObjectiveChart,
  ScheduleChart
} from './chart';
import { FrontChart } from './front';
import { IObjectives, objectivesOf, paretoReport } from './pareto';
import { Curves } from './curves';
import { h, replaceChildren } from './dom';
import {
  earlyStoppingNote,
  formatDuration,
  formatValue,
  paramsAsPython,
  progressText
} from './format';
import { sortTrials } from './ordering';
import { spaceOf } from './geometry';
import { ImportanceChart } from './importances';
import { ParallelChart } from './parallel';
import { lineageOrigins, schedule } from './population';
import { trialCount } from './paging';
import { outOfMemoryText, TrialsTable } from './table';
import { Throttle } from './throttle';
import type { Utilization } from './utilization';
import { IWarmStartPoints, warmStartPoints } from './warm';
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
/**
 * Pages of trials past the detail's first (paging.ts): whether there are more, and reading the next (which draws
 * the view again with it).
 */
export interface IMoreTrials {
  hasMore: () => boolean;
  next: () => Promise<void>;
}

// While a run goes on: its importances at most every 5 s, and 4 times as far apart as the last answer took (the
// server computes them from every completed trial: ~2 s for 10,000); once more when it has ended.
const IMPORTANCES_EVERY_MS = 5000;
const IMPORTANCES_DURATION_FACTOR = 4;
// While a run goes on, the charts of ended trials (objective, parallel coordinates: up to 10,000 points and 300
// lines, tens of milliseconds each) are drawn again at most this often, not at every poll a trial ended in.
const ENDED_CHARTS_EVERY_MS = 3000;

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
  private _schedules = h('div', { class: 'jd-schedules' });
  private _pareto = h('div', { class: 'jd-pareto' });
  private _frontTitle = h('h3', {}, 'Pareto front');
  private _front = new FrontChart();
  private _hypervolume = new HypervolumeChart();
  private _paretoKey = '';
  private _paretoDrawn = 0;
  private _scheduleCharts = new Map<string, ScheduleChart>();
  private _schedulesKey = '';
  private _result = h('div', { class: 'jd-result' });
  private _table: TrialsTable;
  private _trialsTitle = h('h3', {}, 'Trials');
  private _more = h(
    'button',
    {
      class: 'jp-Button jp-mod-styled jd-more',
      title: 'List the next page of trials (best first)'
    },
    'Load more'
  ) as HTMLButtonElement;
  private _endedKey = '';
  private _importancesKey = '';
  private _endedDrawn = 0; // when the charts of ended trials were last drawn (ms)
  private _output = h('pre', { class: 'jd-output' });
  private _importanceAsks: Throttle | null = null;
  // The trials a warm start told: the definition's, fixed for an experiment, so read once for it.
  private _warm: { id: string; points: IWarmStartPoints | null } | null = null;

  constructor(
    private _readLogs: LogsReader | null,
    readImportances: ImportancesReader | null = null,
    private _moreTrials: IMoreTrials | null = null
  ) {
    this._table = new TrialsTable(
      _readLogs ? trialId => void this._showOutput(trialId) : null
    );
    if (readImportances) {
      // No answer (no server: a saved notebook reopened) leaves what is drawn, e.g. the importances the kernel
      // saved with the run.
      this._importanceAsks = new Throttle(
        () => readImportances().then(report => this.drawImportances(report)),
        {
          minMs: IMPORTANCES_EVERY_MS,
          durationFactor: IMPORTANCES_DURATION_FACTOR
        }
      );
    }
    this.node.append(
      this._header,
      this._best,
      this._result,
      this._ablation,
      this._chart.node,
      this._schedules,
      this._pareto,
      this._objectiveTitle,
      this._objective.node,
      this._parallelTitle,
      this._parallel.node,
      this._importances.node,
      this._trialsTitle,
      this._table.node,
      this._more
    );
    this._more.hidden = true;
    this._more.onclick = () => void this._loadMore();
    if (_readLogs) {
      this._output.textContent = 'Click a trial to see what it printed.';
      this.node.append(h('h3', {}, 'Output'), this._output);
    }
  }

  /** Where a caller puts its buttons (the cell's Stop). */
  get actions(): HTMLElement {
    return this._actions;
  }

  /** A section of the caller's (the detail view's utilisation charts), put before the trials table. */
  addSection(node: HTMLElement): void {
    this.node.insertBefore(node, this._trialsTitle);
  }

  /**
   * Draw ``given``, with its ``curves`` (null: they are being read) and, while it runs, what its trials use
   * (``usage``: the running trials' rows say their latest CPU %). Each draw is a "jupyter-dist:draw" entry of the
   * page's performance timeline (bench_lab reads how long the view's own work takes).
   */
  draw(
    given: IExperimentDetail,
    curves: Curves | null,
    curvesChanged = true,
    usage: Utilization | null = null
  ): void {
    const start = performance.now();
    try {
      this._draw(given, curves, curvesChanged, usage);
    } finally {
      performance.measure?.('jupyter-dist:draw', { start });
    }
  }

  private _draw(
    given: IExperimentDetail,
    curves: Curves | null,
    curvesChanged: boolean,
    usage: Utilization | null
  ): void {
    // Nothing optimised (a data-parallel run): no direction, so no "best" and trials in id order. The store
    // keeps a direction for every run, so this is decided here, once, for every part of the view.
    const detail = given.metric ? given : { ...given, mode: null };
    const trials = sortTrials(detail.trials, detail.mode);
    const best = bestOf(trials, detail.mode);
    const earlyStopping = earlyStoppingNote(detail);
    replaceChildren(
      this._header,
      h('span', { class: 'jd-detail-name' }, `${detail.kind} ${detail.name}`),
      h('span', { class: `jd-state jd-state-${detail.state}` }, detail.state),
      h(
        'span',
        { class: 'jd-detail-meta' },
        // A PBT run's trials are its members' segments: how many is not known in advance.
        `${detail.kind === 'pbt' ? `${detail.trials_done} segments` : `${progressText(detail)} trials`} · ${formatDuration(detail.duration)}`
      ),
      earlyStopping
        ? h(
            'span',
            { class: 'jd-detail-meta jd-early-stopping' },
            earlyStopping
          )
        : null,
      outOfMemoryText(detail.trials)
        ? h(
            'span',
            { class: 'jd-detail-meta jd-out-of-memory' },
            outOfMemoryText(detail.trials)
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
    // Several objectives: no one best trial, but a front.
    const objectives = objectivesOf(detail);
    this._drawBest(detail, objectives ? null : best);
    this._drawAblation(detail);
    // A data-parallel run returns a value (rank 0's): shown as the kernel's repr of it.
    const returned = detail.kind === 'ddp' ? detail.trials[0]?.result : null;
    const restarts = restartLines(detail.trials);
    replaceChildren(
      this._result,
      restarts.length ? h('h3', {}, 'Elastic restarts') : null,
      restarts.length
        ? h(
            'ul',
            { class: 'jd-restarts' },
            ...restarts.map(line => h('li', {}, line))
          )
        : null,
      returned ? h('h3', {}, 'Returned (rank 0)') : null,
      returned ? h('pre', { class: 'jd-output' }, returned) : null
    );
    const objective =
      detail.kind === 'hpo' && detail.metric && detail.mode && !objectives;
    for (const node of [
      this._objectiveTitle,
      this._objective.node,
      this._parallelTitle,
      this._parallel.node,
      this._importances.node
    ]) {
      node.hidden = !objective;
    }
    // Redrawn when a trial has ended, not at every poll (they only change then), and while the run goes on at
    // most every ENDED_CHARTS_EVERY_MS; a later poll draws what a skipped one left.
    const ended = `${detail.trials.length}:${detail.trials_done}:${detail.state}`;
    const running = detail.state === 'running';
    const now = Date.now();
    if (
      objective &&
      ended !== this._endedKey &&
      (!running || now - this._endedDrawn >= ENDED_CHARTS_EVERY_MS)
    ) {
      this._endedKey = ended;
      this._endedDrawn = now;
      const metric = detail.metric as string;
      const mode = detail.mode as Mode;
      if (this._warm?.id !== detail.id) {
        this._warm = { id: detail.id, points: warmStartPoints(detail) };
      }
      this._objective.draw(detail.trials, metric, mode, this._warm.points);
      const listed = detail.trials.length;
      const total = trialCount(detail);
      this._objectiveTitle.textContent =
        listed < total
          ? `Objective by trial: the ${listed.toLocaleString('en-US')} listed of ${total.toLocaleString('en-US')} trials`
          : 'Objective by trial';
      const { drawn, completed } = this._parallel.draw(
        detail.trials,
        spaceOf(detail.definition.space ?? {}, detail.trials),
        metric,
        mode
      );
      // Past MAX_LINES the best are drawn: the title says so, or 300 lines read as every trial.
      // The trials listed may be a page of many: the count is the run's.
      const all = Math.max(completed, detail.counts?.completed ?? 0);
      this._parallelTitle.textContent =
        drawn < all
          ? `Parameters of the best ${drawn.toLocaleString('en-US')} of ${all.toLocaleString('en-US')} completed trials`
          : 'Parameters of the completed trials';
    }
    this._drawPareto(detail, objectives, ended, running, now);
    // They change only as trials complete. Asked once the curves are in, not beside them: on the server both
    // are Python, and an answer of seconds would slow the other down.
    if (objective && curves && ended !== this._importancesKey) {
      this._importancesKey = ended;
      this._importanceAsks?.ask(!running);
    }
    const population = detail.kind === 'pbt';
    if (!curves) {
      this._chart.reading();
    } else if (curvesChanged && population) {
      // Its segments, the newest first, coloured by the member whose first weights each carries on.
      const origins = lineageOrigins(detail.trials);
      const members = new Map(
        detail.trials.map(t => [t.trial_id, t.labels.member])
      );
      this._chart.draw(
        curves,
        detail.trials
          .map(t => t.trial_id)
          .filter(id => curves.has(id))
          .sort((a, b) => b - a),
        {
          limit: MAX_SEGMENT_CURVES,
          colourOf: id => origins.get(id) ?? 0,
          labelOf: id => `member ${members.get(id)} · trial ${id}`
        }
      );
    } else if (curvesChanged) {
      // Best first, then the running ones: the curves that matter are drawn (and coloured) first.
      this._chart.draw(
        curves,
        trials.map(t => t.trial_id).filter(id => curves.has(id))
      );
    }
    this._drawSchedules(detail);
    this._trialsTitle.textContent = trialsTitle(detail);
    this._more.hidden = !this._moreTrials?.hasMore();
    // The metric column: the objective, or (a data-parallel run has none) the metric the curves draw.
    this._table.draw({
      trials,
      metric: detail.metric ?? curves?.metric ?? 'value',
      others: objectives?.names.slice(1),
      best,
      latestCpu: usage ? id => usage.latestCpu(id) : undefined
    });
  }

  /** The parameter importances (an HPO run's), or none. */
  drawImportances(report: IParamImportances | null): void {
    this._importances.draw(report);
  }

  resize(): void {
    this._chart.resize(this._chart.node.clientWidth);
    this._hypervolume.resize(this._hypervolume.node.clientWidth);
    for (const chart of this._scheduleCharts.values()) {
      chart.resize(chart.node.clientWidth);
    }
    this._objective.resize(this._objective.node.clientWidth);
  }

  dispose(): void {
    this._chart.dispose();
    this._hypervolume.dispose();
    for (const chart of this._scheduleCharts.values()) {
      chart.dispose();
    }
    this._objective.dispose();
    this._table.dispose();
    this._importanceAsks?.dispose();
  }

  /** Several objectives: the front and its hypervolume, redrawn as trials end (as the objective chart). */
  private _drawPareto(
    d: IExperimentDetail,
    objectives: IObjectives | null,
    ended: string,
    running: boolean,
    now: number
  ): void {
    if (!objectives) {
      replaceChildren(this._pareto);
      this._paretoKey = '';
      return;
    }
    if (!this._pareto.childElementCount) {
      replaceChildren(
        this._pareto,
        this._frontTitle,
        this._front.node,
        h('h3', {}, 'Hypervolume as trials completed'),
        this._hypervolume.node
      );
    }
    if (
      ended === this._paretoKey ||
      (running && now - this._paretoDrawn < ENDED_CHARTS_EVERY_MS)
    ) {
      return;
    }
    this._paretoKey = ended;
    this._paretoDrawn = now;
    const report = paretoReport(d.trials, objectives);
    this._frontTitle.textContent = `Pareto front: ${report.front.size} of ${report.points.length.toLocaleString('en-US')} completed trials`;
    this._front.draw(report, objectives);
    this._hypervolume.draw(report.history);
  }

  /** A PBT run: each perturbed hyperparameter's schedule, member by member. */
  private _drawSchedules(d: IExperimentDetail): void {
    const names =
      d.kind === 'pbt'
        ? Object.keys(d.definition.details?.mutations ?? {})
        : [];
    if (!names.length) {
      replaceChildren(this._schedules);
      return;
    }
    const nodes: HTMLElement[] = [
      h('h3', {}, 'Hyperparameter schedules (member by member)')
    ];
    for (const name of names) {
      let chart = this._scheduleCharts.get(name);
      if (!chart) {
        chart = new ScheduleChart();
        this._scheduleCharts.set(name, chart);
      }
      nodes.push(chart.node);
    }
    replaceChildren(this._schedules, ...nodes);
    // A schedule changes only as segments start: drawn again then, not at every poll.
    const key = `${d.trials.length}:${d.state}`;
    if (key === this._schedulesKey) {
      return;
    }
    this._schedulesKey = key;
    for (const name of names) {
      this._scheduleCharts.get(name)?.draw(name, schedule(d.trials, name));
    }
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

  private _drawBest(d: IExperimentDetail, best: ITrialSummary | null): void {
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

  private async _loadMore(): Promise<void> {
    const more = this._moreTrials;
    if (!more || this._more.disabled) {
      return;
    }
    this._more.disabled = true;
    this._more.textContent = 'Loading…';
    try {
      await more.next();
      this._more.title = 'List the next page of trials (best first)';
    } catch (reason) {
      // No server (a saved notebook opened elsewhere), or the store no longer has the run.
      this._more.title = `Could not read more trials: ${reason}`;
    } finally {
      this._more.disabled = false;
      this._more.textContent = 'Load more';
      this._more.hidden = !more.hasMore();
    }
  }

  private async _showOutput(trialId: number): Promise<void> {
    const text = await (this._readLogs as LogsReader)(trialId);
    this._output.textContent = text || `Trial ${trialId} printed nothing.`;
  }
}

/**
 * The table's title: how many trials it lists (it scrolls in a box of its own, so its length does not show), and
 * when it lists fewer than the run had (a detail lists its first page, best first; "Load more" the next), how
 * many; a cell saved before 0.5 kept its best trials and the Experiments panel has them all.
 */
export function trialsTitle(d: IExperimentDetail): string {
  const listed = d.trials.length;
  const total = trialCount(d);
  const count = (n: number) => n.toLocaleString('en-US');
  if (listed < total && d.trial_count === undefined) {
    return `Trials: ${count(listed)} of ${count(total)} saved in this notebook (the Experiments panel lists them all)`;
  }
  if (listed < total) {
    return `Trials: ${count(listed)} of ${count(total)} listed, best first`;
  }
  return `Trials (${count(listed)})`;
}

/** The best completed trial of ``bestFirst`` (sorted by ``sortTrials``), or null. */
function bestOf(
  bestFirst: ITrialSummary[],
  mode: Mode | null
): ITrialSummary | null {
  const first = bestFirst[0];
  return mode !== null &&
    first &&
    first.state === 'completed' &&
    first.value !== null
    ? first
    : null;
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

/**
 * Each time an elastic data-parallel trial started again at another size, oldest first, as the kernel said it
 * ("rank 2 (worker tcp://…) lost at step 10: continuing on 2 ranks from step 8"), with the time and the steps it
 * redid; a trial of several (HPO with workers per trial) is named.
 */
export function restartLines(trials: ITrialSummary[]): string[] {
  const several = trials.filter(t => t.restarts?.length).length > 1;
  return trials.flatMap(t =>
    (t.restarts ?? []).map(r => {
      const when = new Date(r.at * 1000).toLocaleTimeString();
      const redone = r.steps_redone
        ? ` · ${r.steps_redone} step${r.steps_redone === 1 ? '' : 's'} redone`
        : '';
      return `${several ? `trial ${t.trial_id}: ` : ''}${when} · ${r.message}${redone}`;
    })
  );
}
