/**
 * What the panel shows, computed from the server extension's JSON (jupyter_dist/server/_manager.py), with no
 * DOM: formatting, ordering, and learning curves assembled from metric pages. Unit-tested in model.test.ts.
 */

export type Mode = 'min' | 'max';

/** One row of GET /jupyter-dist/api/experiments. */
export interface IExperimentSummary {
  id: string;
  name: string;
  kind: 'hpo' | 'ablation' | 'ddp' | string;
  state: string;
  trials_done: number;
  trials_total: number | null;
  metric: string | null;
  mode: Mode | null;
  best: number | null;
  started: number;
  duration: number;
}

export interface IExperimentList {
  experiments: IExperimentSummary[];
  total: number;
}

export interface ITrial {
  trial_id: number;
  state: string;
  value: number | null;
  params: Record<string, unknown>;
  labels: Record<string, unknown>;
  started: number;
  duration: number | null;
  steps: number;
  attempts: number;
  last: Record<string, number | null>;
  error: string | null;
  result?: string | null; // a data-parallel trial's returned value (rank 0's), as its repr
  checkpoint_step?: number | null; // its newest checkpoint's step (jupyter_dist.checkpoint)
  resumed_from?: number | null; // the step its current attempt resumed from
}

/** GET /jupyter-dist/api/experiments/<id>. */
export interface IExperimentDetail extends Omit<IExperimentSummary, 'best'> {
  error: string | null;
  definition: Record<string, any>;
  best: {
    trial_id: number;
    value: number;
    params: Record<string, unknown>;
  } | null;
  trials: ITrial[];
}

/** GET .../metrics?since=<cursor>: rows of [trial_id, attempt, step, sent_at, metrics]. */
export interface IMetricsPage {
  columns: string[];
  rows: [number, number, number, number, Record<string, number | null>][];
  cursor: number;
  more: boolean;
}

/** Learning curves as the kernel saves them in the cell's output: per trial [id, attempt, steps, values]. */
export interface ICurvesSnapshot {
  metric: string | null;
  trials: [number, number, number[], (number | null)[]][];
}

/**
 * The cell output's data (MIME type application/vnd.jupyter-dist.experiment+json), written by the kernel
 * (jupyter_dist/widgets/_lab.py): ``phase`` while the run starts; ``id`` once it is recorded (the view then
 * follows it through the server); ``snapshot`` and ``curves`` when it has ended, so a saved notebook shows it
 * without a kernel or a store.
 */
export interface IExperimentBundle {
  version: number;
  phase?: string;
  started?: number;
  id?: string;
  snapshot?: IExperimentDetail;
  curves?: ICurvesSnapshot;
}

export interface ILogs {
  trial_id: number;
  stdout: string;
  stderr: string;
  error: string | null;
}

/** A number as every part of the UI writes it: 4 significant digits, no exponent for ordinary sizes. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) {
    return '–';
  }
  if (Number.isInteger(value)) {
    return String(value);
  }
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e6)) {
    return value.toExponential(3);
  }
  return String(Number(value.toPrecision(4)));
}

/** A parameter value as the summary line in the kernel writes it. */
export function formatParam(value: unknown): string {
  if (typeof value === 'number') {
    return formatValue(value);
  }
  if (typeof value === 'string') {
    return `'${value}'`;
  }
  return JSON.stringify(value);
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '–';
  }
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  return h ? `${h}:${two(m)}:${two(rest)}` : `${two(m)}:${two(rest)}`;
}

/** "7/32" (or "7/?" for a run bounded by a timeout). */
export function progressText(
  e: Pick<IExperimentSummary, 'trials_done' | 'trials_total'>
): string {
  return `${e.trials_done}/${e.trials_total ?? '?'}`;
}

/** The status-bar text for the running experiments: "hpo train: 7/32 · best 0.975" (and "+1 more"). */
export function statusText(experiments: IExperimentSummary[]): string {
  const running = experiments.filter(e => e.state === 'running');
  if (!running.length) {
    return '';
  }
  const first = running[0];
  let text = `${first.kind} ${first.name}: ${progressText(first)}`;
  if (first.best !== null) {
    text += ` · best ${formatValue(first.best)}`;
  }
  if (running.length > 1) {
    text += ` · +${running.length - 1} more`;
  }
  return text;
}

/** Parameter names in the order the first trial that has them lists them (the search space's order). */
export function paramNames(trials: ITrial[]): string[] {
  const names: string[] = [];
  for (const t of trials) {
    for (const name of Object.keys(t.params)) {
      if (!names.includes(name)) {
        names.push(name);
      }
    }
  }
  return names;
}

/**
 * Trials best first: completed ones by value (the objective's direction), then running ones (newest first),
 * then the rest by id. Without an objective (a data-parallel run) by id.
 */
export function sortTrials(trials: ITrial[], mode: Mode | null): ITrial[] {
  const rank = (t: ITrial) =>
    t.state === 'completed' && t.value !== null
      ? 0
      : t.state === 'running'
        ? 1
        : 2;
  return [...trials].sort((a, b) => {
    if (mode === null) {
      return a.trial_id - b.trial_id;
    }
    const byRank = rank(a) - rank(b);
    if (byRank !== 0) {
      return byRank;
    }
    if (rank(a) === 0) {
      const diff = (a.value as number) - (b.value as number);
      return mode === 'max' ? -diff : diff;
    }
    return rank(a) === 1 ? b.trial_id - a.trial_id : a.trial_id - b.trial_id;
  });
}

/** The best completed trial, or null. */
export function bestTrial(trials: ITrial[], mode: Mode | null): ITrial | null {
  if (mode === null) {
    return null;
  }
  const first = sortTrials(trials, mode)[0];
  return first && first.state === 'completed' && first.value !== null
    ? first
    : null;
}

/** The best trial's parameters as Python keyword arguments, for the copy button. */
export function paramsAsPython(params: Record<string, unknown>): string {
  const py = (v: unknown): string => {
    if (v === null) {
      return 'None';
    }
    if (v === true || v === false) {
      return v ? 'True' : 'False';
    }
    if (typeof v === 'string') {
      return JSON.stringify(v);
    }
    if (Array.isArray(v)) {
      return `[${v.map(py).join(', ')}]`;
    }
    return String(v);
  };
  return Object.entries(params)
    .map(([k, v]) => `${k}=${py(v)}`)
    .join(', ');
}

/**
 * Learning curves of one metric, per trial, assembled from metric pages as they are fetched. A trial that was
 * re-run (a lost worker) starts its curve over from the new attempt's first step: the earlier attempt's points
 * before it are kept, so an attempt that resumed from a checkpoint (its first step N + 1) continues the curve,
 * and one that starts from 0 replaces it. Without a metric (a data-parallel run optimises none) the first one
 * reported is drawn, as in the kernel's view.
 */
export class Curves {
  cursor = 0;
  private _byTrial = new Map<
    number,
    { attempt: number; steps: number[]; values: number[] }
  >();

  constructor(public metric: string | null) {}

  /** Add a page; returns whether any curve changed. */
  add(page: IMetricsPage): boolean {
    let changed = false;
    for (const [trialId, attempt, step, , metrics] of page.rows) {
      if (this.metric === null) {
        this.metric = Object.keys(metrics)[0] ?? null;
      }
      const value = this.metric === null ? null : metrics[this.metric];
      if (value === null || value === undefined) {
        continue;
      }
      let curve = this._byTrial.get(trialId);
      if (!curve || attempt > curve.attempt) {
        const kept = curve ? curve.steps.findIndex(s => s >= step) : 0;
        const upTo = kept === -1 ? curve!.steps.length : kept;
        curve = {
          attempt,
          steps: curve ? curve.steps.slice(0, upTo) : [],
          values: curve ? curve.values.slice(0, upTo) : []
        };
        this._byTrial.set(trialId, curve);
      } else if (attempt < curve.attempt) {
        continue;
      }
      curve.steps.push(step);
      curve.values.push(value);
      changed = true;
    }
    this.cursor = page.cursor;
    return changed;
  }

  /** Curves saved in a cell's output. */
  static fromSnapshot(snapshot: ICurvesSnapshot): Curves {
    const curves = new Curves(snapshot.metric);
    for (const [trialId, attempt, steps, values] of snapshot.trials) {
      const kept = { attempt, steps: [] as number[], values: [] as number[] };
      steps.forEach((step, i) => {
        const value = values[i];
        if (value !== null && value !== undefined) {
          kept.steps.push(step);
          kept.values.push(value);
        }
      });
      curves._byTrial.set(trialId, kept);
    }
    return curves;
  }

  trialIds(): number[] {
    return [...this._byTrial.keys()].sort((a, b) => a - b);
  }

  curve(trialId: number): { steps: number[]; values: number[] } | undefined {
    return this._byTrial.get(trialId);
  }
}

/** One variant of an ablation study: its completed runs' mean and how much the objective loses without it. */
export interface IAblationRow {
  component: string;
  kind: string;
  mean: number | null;
  impact: number | null; // positive: the component helps (the objective is worse without it)
  n: number;
}

/**
 * An ablation study's variants from its trials (labels ``ablated`` and ``kind``), as the kernel's
 * ``summary()`` computes them: the baseline first, then the components by impact, largest first.
 */
export function ablationRows(
  trials: ITrial[],
  mode: Mode | null
): IAblationRow[] {
  const runs = new Map<string, { kind: string; values: number[] }>();
  for (const t of trials) {
    const component = String(t.labels.ablated ?? '');
    const entry = runs.get(component) ?? {
      kind: String(t.labels.kind ?? ''),
      values: []
    };
    if (t.state === 'completed' && t.value !== null) {
      entry.values.push(t.value);
    }
    runs.set(component, entry);
  }
  const mean = (values: number[]) =>
    values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  const baseline = [...runs.values()].find(r => r.kind === 'baseline');
  const base = baseline ? mean(baseline.values) : null;
  const sign = mode === 'max' ? -1 : 1;
  const rows = [...runs.entries()].map(([component, r]) => {
    const m = mean(r.values);
    return {
      component,
      kind: r.kind,
      mean: m,
      impact:
        m === null || base === null || r.kind === 'baseline'
          ? r.kind === 'baseline'
            ? 0
            : null
          : sign * (m - base),
      n: r.values.length
    };
  });
  return rows.sort((a, b) => {
    if (a.kind === 'baseline' || b.kind === 'baseline') {
      return a.kind === 'baseline' ? -1 : 1;
    }
    return (b.impact ?? -Infinity) - (a.impact ?? -Infinity);
  });
}

/** The value a trials-table column shows for a trial, for sorting by that column. */
export function columnValue(
  t: ITrial,
  column: string,
  metric: string
): number | string | null {
  switch (column) {
    case 'trial':
      return t.trial_id;
    case 'state':
      return t.state;
    case 'steps':
      return t.steps;
    case 'duration':
      return t.duration;
    case metric:
      return t.value ?? t.last[metric] ?? null;
  }
  const v = column in t.params ? t.params[column] : t.labels[column];
  return typeof v === 'number' || typeof v === 'string'
    ? v
    : v === undefined
      ? null
      : JSON.stringify(v);
}

/** ``trials`` sorted by one column (missing values last, whichever the direction). */
export function sortByColumn(
  trials: ITrial[],
  column: string,
  metric: string,
  ascending: boolean
): ITrial[] {
  return [...trials].sort((a, b) => {
    const x = columnValue(a, column, metric);
    const y = columnValue(b, column, metric);
    if (x === null || y === null) {
      return x === y ? 0 : x === null ? 1 : -1;
    }
    const order = x < y ? -1 : x > y ? 1 : 0;
    return ascending ? order : -order;
  });
}

/** One axis of a parallel-coordinates chart: where a value sits on it (0 bottom .. 1 top) and its tick labels. */
export interface IParallelAxis {
  name: string;
  position: (value: unknown) => number | null;
  ticks: { at: number; label: string }[];
}

/**
 * Parallel coordinates of the completed trials: one axis per searched parameter (log-scaled where the space
 * searches on a log scale, a choice's options evenly spaced in their order), then the objective. ``lines``:
 * each completed trial's positions on the axes, best first.
 */
export function parallelCoordinates(
  trials: ITrial[],
  space: Record<string, any>,
  metric: string,
  mode: Mode
): { axes: IParallelAxis[]; lines: { trialId: number; points: number[] }[] } {
  const done = sortTrials(trials, mode).filter(
    t => t.state === 'completed' && t.value !== null
  );
  const numeric = (
    name: string,
    values: number[],
    log: boolean
  ): IParallelAxis => {
    const f = (v: number) => (log ? Math.log10(v) : v);
    const lo = Math.min(...values.map(f));
    const hi = Math.max(...values.map(f));
    const span = hi - lo || 1;
    const label = (x: number) => formatValue(log ? 10 ** x : x);
    return {
      name,
      position: v =>
        typeof v === 'number' && (!log || v > 0) ? (f(v) - lo) / span : null,
      ticks: [
        { at: 0, label: label(lo) },
        { at: 1, label: label(hi) }
      ]
    };
  };
  const axes: IParallelAxis[] = [];
  for (const [name, spec] of Object.entries(space)) {
    if (spec && Array.isArray(spec.choice)) {
      const options = spec.choice.map((o: unknown) => JSON.stringify(o));
      const step = options.length > 1 ? 1 / (options.length - 1) : 0;
      axes.push({
        name,
        position: v => {
          const i = options.indexOf(JSON.stringify(v));
          return i < 0 ? null : options.length > 1 ? i * step : 0.5;
        },
        ticks: spec.choice.map((o: unknown, i: number) => ({
          at: options.length > 1 ? i * step : 0.5,
          label: formatParam(o)
        }))
      });
    } else if (spec && (spec.uniform || spec.integer)) {
      const values = done
        .map(t => t.params[name])
        .filter((v): v is number => typeof v === 'number');
      if (values.length) {
        axes.push(numeric(name, values, Boolean(spec.log)));
      }
    }
  }
  axes.push(
    numeric(
      metric,
      done.map(t => t.value as number),
      false
    )
  );
  const lines = done.map(t => ({
    trialId: t.trial_id,
    points: axes.map((axis, i) =>
      i === axes.length - 1
        ? (axis.position(t.value) ?? 0)
        : (axis.position(t.params[axis.name]) ?? 0)
    )
  }));
  return { axes, lines };
}
