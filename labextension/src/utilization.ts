/**
 * What the trials used (GET .../utilization: a sample about once a second per running trial), gathered per trial
 * from pages read on from their cursor, and drawn over time as small charts: CPU %, resident memory, and, where a
 * trial held GPUs that NVML reads, their utilisation and memory.
 */

import uPlot from 'uplot';

import { Chart, ILine, alignedLines, lineColour } from './chart';
import { h, replaceChildren } from './dom';
import { formatValue } from './format';
import type { IExperimentDetail, IUtilizationPage } from './wire';

/** Samples per trial a view keeps: a trial that reaches twice this many is thinned back to it. */
export const UTILIZATION_POINTS = 300;
// Lines per chart: the running trials first, then the latest to end. Past a dozen, lines on a time axis overlap
// into a blur, and every line adds a column to every row uPlot draws.
export const MAX_USAGE_LINES = 12;

/** One trial's samples, oldest first (a GPU's null where NVML read none). */
export interface ITrialUsage {
  time: number[];
  cpu: number[];
  rss: number[];
  gpu: (number | null)[];
  gpuMem: (number | null)[];
}

export type UsageColumn = Exclude<keyof ITrialUsage, 'time'>;

/** The charts, in the order drawn: each one's column and the label of its y axis. */
export const USAGE_CHARTS: [UsageColumn, string][] = [
  ['cpu', 'CPU %'],
  ['rss', 'RSS MB'],
  ['gpu', 'GPU %'],
  ['gpuMem', 'GPU MB']
];

/** The indices of ``points`` of ``n`` samples spread evenly, the first and the latest always kept. */
function kept(n: number, points: number): number[] {
  return Array.from({ length: points }, (_, i) =>
    Math.round((i * (n - 1)) / Math.max(1, points - 1))
  );
}

/** Every trial's samples so far, growing as pages are read on from the cursor; each trial's bounded. */
export class Utilization {
  cursor = 0;
  private _byTrial = new Map<number, ITrialUsage>();

  constructor(readonly points = UTILIZATION_POINTS) {}

  /** Add a page (GET .../utilization?since=cursor); whether any trial got a sample. */
  add(page: IUtilizationPage): boolean {
    for (const [trialId, time, cpu, rss, gpu, gpuMem] of page.rows) {
      let usage = this._byTrial.get(trialId);
      if (!usage) {
        usage = { time: [], cpu: [], rss: [], gpu: [], gpuMem: [] };
        this._byTrial.set(trialId, usage);
      }
      usage.time.push(time);
      usage.cpu.push(cpu);
      usage.rss.push(rss);
      usage.gpu.push(gpu);
      usage.gpuMem.push(gpuMem);
      if (usage.time.length >= 2 * this.points) {
        const keep = kept(usage.time.length, this.points);
        for (const column of ['time', ...USAGE_CHARTS.map(c => c[0])]) {
          const values = usage[column as keyof ITrialUsage] as unknown[];
          values.splice(0, values.length, ...keep.map(i => values[i]));
        }
      }
    }
    this.cursor = page.cursor;
    return page.rows.length > 0;
  }

  trialIds(): number[] {
    return [...this._byTrial.keys()].sort((a, b) => a - b);
  }

  usage(trialId: number): ITrialUsage | undefined {
    return this._byTrial.get(trialId);
  }

  /** A trial's newest CPU %, or null before its first sample. */
  latestCpu(trialId: number): number | null {
    const cpu = this._byTrial.get(trialId)?.cpu;
    return cpu?.length ? cpu[cpu.length - 1] : null;
  }

  /** Whether any trial has a value in ``column`` (the GPU's are null for a trial that held no GPU). */
  has(column: UsageColumn): boolean {
    for (const usage of this._byTrial.values()) {
      if (usage[column].some(v => v !== null)) {
        return true;
      }
    }
    return false;
  }
}

/** The trials a chart draws: the running ones with samples, then the latest others, at most ``limit``. */
export function usageTrials(
  detail: IExperimentDetail,
  usage: Utilization,
  limit = MAX_USAGE_LINES
): number[] {
  const running = new Set(
    detail.trials.filter(t => t.state === 'running').map(t => t.trial_id)
  );
  const ids = usage.trialIds();
  const first = ids.filter(id => running.has(id));
  const rest = ids.filter(id => !running.has(id)).reverse();
  return [...first, ...rest].slice(0, limit);
}

/** One line per trial of ``column`` over seconds since ``started``. */
export function usageLines(
  usage: Utilization,
  trialIds: number[],
  column: UsageColumn,
  started: number
): ILine[] {
  return trialIds.map(id => {
    const samples = usage.usage(id);
    return {
      xs: samples?.time.map(t => t - started) ?? [],
      ys: samples?.[column] ?? []
    };
  });
}

class UsageChart extends Chart {
  private _shown = '';

  constructor() {
    super('jd-usage-chart', 150);
  }

  draw(label: string, trialIds: number[], lines: ILine[]): void {
    const data = alignedLines(lines);
    const shown = trialIds.join(',');
    if (this._plot && shown === this._shown) {
      this._plot.setData(data); // new samples of the same trials: no new chart
      return;
    }
    this._shown = shown;
    this.plot(
      'seconds since the start',
      label,
      trialIds.map((id, i) => ({
        label: `trial ${id}`,
        stroke: lineColour(i),
        width: 1.25,
        spanGaps: true, // the rows are every trial's sample times: a trial has none at the others'
        value: (_u: uPlot, v: number | null) => formatValue(v)
      })),
      data,
      true,
      false
    );
  }
}

/** The section of an experiment's view that charts what its trials used. */
export class UtilizationSection {
  readonly node = h('div', { class: 'jd-usage' });
  private _title = h('h3', {}, 'Utilisation');
  private _note = h(
    'div',
    { class: 'jd-usage-none' },
    'Reading what the trials used…'
  );
  private _charts = new Map<UsageColumn, UsageChart>();
  private _shown = '';

  constructor() {
    this._show('none', [this._title, this._note]);
  }

  draw(detail: IExperimentDetail, usage: Utilization): void {
    const ids = usageTrials(detail, usage);
    if (!ids.length) {
      // A trial's first sample comes after about a second of running: brief trials have none.
      this._note.textContent =
        detail.state === 'running'
          ? 'No utilisation samples yet: each running trial is sampled about once a second.'
          : 'No utilisation samples: trials shorter than about a second have none.';
      this._show('none', [this._title, this._note]);
      return;
    }
    const sampled = usage.trialIds().length;
    const which =
      ids.length < sampled
        ? `${ids.length} of the ${sampled} trials sampled: the running ones, then the latest`
        : 'a sample about once a second per running trial';
    // CPU % is of one core (a trial's threads add up past 100); RSS is its worker process's.
    this._title.textContent = `Utilisation (${which}; CPU % of one core)`;
    // No GPU (or none NVML reads): no GPU charts, rather than empty ones.
    const columns = USAGE_CHARTS.filter(([column]) => usage.has(column));
    const charts = columns.map(([column]) => {
      let chart = this._charts.get(column);
      if (!chart) {
        chart = new UsageChart();
        this._charts.set(column, chart);
      }
      return chart;
    });
    // In the page before they are drawn, so that each is drawn at its node's width.
    this._show(columns.map(([column]) => column).join(','), [
      this._title,
      ...charts.map(chart => chart.node)
    ]);
    columns.forEach(([column, label], i) =>
      charts[i].draw(label, ids, usageLines(usage, ids, column, detail.started))
    );
  }

  /** The section's children, replaced only when they change (moving a chart in the page lays it out again). */
  private _show(key: string, nodes: HTMLElement[]): void {
    if (key !== this._shown) {
      this._shown = key;
      replaceChildren(this.node, ...nodes);
    }
  }

  resize(): void {
    for (const chart of this._charts.values()) {
      chart.resize(chart.node.clientWidth);
    }
  }

  dispose(): void {
    for (const chart of this._charts.values()) {
      chart.dispose();
    }
  }
}
