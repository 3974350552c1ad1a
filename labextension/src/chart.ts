/**
 * Learning curves drawn with uPlot (about 50 KB, bundled with the extension, so it is loaded once with
 * JupyterLab). Colours come from JupyterLab's CSS variables, so the chart follows the light and dark themes.
 */

import uPlot from 'uplot';

import { Curves } from './curves';
import { formatValue } from './format';
import type { ISchedule } from './population';
import type { IWarmStartPoints } from './warm';
import type { ITrialSummary, Mode } from './wire';

// Tableau 10: tells ten series apart on light and dark backgrounds alike.
const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac'
];
// Beyond this many curves a chart is a blur: the best ones (and the running ones) are drawn.
export const MAX_CURVES = 40;
// A PBT run's curves are its segments, short pieces of its members' curves: its newest this many are drawn.
export const MAX_SEGMENT_CURVES = 400;
const WHOLE_INCREMENTS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6
];

// uPlot's own width of an axis, in CSS pixels: the least a fitted y axis takes, so short labels look as before.
const AXIS_SIZE = 50;

/** A y axis' width fitted to its widest tick label (uPlot's ``Axis.size`` callback): its ticks, its gap and the
 * label's text. uPlot's fixed 50 px ran labels such as "0.9234" (values that differ in the fourth digit) into
 * the axis title. Never narrower than uPlot's own width. */
export function fittedAxisSize(
  self: uPlot,
  values: string[] | null,
  axisIdx: number,
  cycleNum: number
): number {
  // uPlot's axes at run time: their font as [CSS font, size] and the width it last chose
  const axis = self.axes[axisIdx] as uPlot.Axis & {
    _size?: number;
    font: unknown;
  };
  if (cycleNum > 1 && axis._size) {
    return axis._size; // uPlot asks again while the ticks settle: keep the last answer, so that it converges
  }
  const widest = (values ?? []).reduce(
    (a, v) => (v.length > a.length ? v : a),
    ''
  );
  let text = 0;
  if (widest) {
    self.ctx.font = Array.isArray(axis.font) ? axis.font[0] : String(axis.font);
    // the canvas is drawn at the device's pixel ratio, the axis sized in CSS pixels
    text =
      self.ctx.measureText(widest).width / (globalThis.devicePixelRatio || 1);
  }
  const ticks = axis.ticks?.size ?? 10;
  const gap = axis.gap ?? 5;
  return Math.max(AXIS_SIZE, Math.ceil(ticks + gap + text + 2));
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

/** One line of a chart: its y at each of its x (a trial's curve, an experiment's best so far). */
export interface ILine {
  xs: number[];
  ys: (number | null)[];
}

/** Rows of x (the union of the lines' xs) and one y column per line, null where a line has no point. */
export function alignedLines(lines: ILine[]): uPlot.AlignedData {
  const xs = [...new Set(lines.flatMap(line => line.xs))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const columns = lines.map(line => {
    const ys: (number | null)[] = new Array(xs.length).fill(null);
    line.xs.forEach((x, i) => {
      ys[index.get(x) as number] = line.ys[i];
    });
    return ys;
  });
  return [xs, ...columns];
}

/** Rows of x (the union of steps) and one y column per trial, null where a trial has no point. */
export function aligned(curves: Curves, trialIds: number[]): uPlot.AlignedData {
  return alignedLines(
    trialIds.map(id => {
      const curve = curves.curve(id);
      return { xs: curve?.steps ?? [], ys: curve?.values ?? [] };
    })
  );
}

/** The colour of the ``index``th line of a chart (an experiment's in a comparison: the same in each of its parts). */
export function lineColour(index: number): string {
  return PALETTE[index % PALETTE.length];
}

/** A uPlot chart in a node of its own, sized to it, themed by JupyterLab's CSS variables. */
export abstract class Chart {
  readonly node: HTMLElement;
  protected _plot: uPlot | null = null;

  constructor(
    className: string,
    private _height: number
  ) {
    this.node = document.createElement('div');
    this.node.className = className;
  }

  resize(width: number): void {
    this._plot?.setSize({ width: Math.max(200, width), height: this._height });
  }

  dispose(): void {
    this._plot?.destroy();
    this._plot = null;
  }

  /** A new plot of ``series`` over ``data`` in this node, replacing the last one; x in whole numbers unless
   * ``wholeX`` is false (seconds). */
  protected plot(
    xLabel: string,
    yLabel: string,
    series: uPlot.Series[],
    data: uPlot.AlignedData,
    legend = true,
    wholeX = true
  ): void {
    this.dispose();
    this.node.textContent = '';
    const text = cssVar('--jp-ui-font-color2', '#616161');
    const grid = cssVar('--jp-border-color2', '#e0e0e0');
    const axis = {
      stroke: text,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid }
    };
    this._plot = new uPlot(
      {
        width: Math.max(200, this.node.clientWidth || 600),
        height: this._height,
        legend: { show: legend },
        scales: { x: { time: false } },
        axes: [
          // steps and trial ids are whole numbers: no ticks between them
          {
            ...axis,
            label: xLabel,
            ...(wholeX ? { incrs: WHOLE_INCREMENTS } : {})
          },
          {
            ...axis,
            label: yLabel,
            values: (_u, vs) => vs.map(v => formatValue(v)),
            size: fittedAxisSize
          }
        ],
        series: [{ label: xLabel }, ...series]
      },
      data,
      this.node
    );
  }

  /** Nothing to draw: say why. */
  protected empty(message: string): void {
    this.dispose();
    this.node.textContent = message;
  }
}

/** How a CurveChart draws: how many curves, each one's colour (an index into the palette) and label. */
export interface ICurveOptions {
  limit?: number;
  colourOf?: (trialId: number) => number;
  labelOf?: (trialId: number) => string;
}

export class CurveChart extends Chart {
  private _shown: number[] = [];

  constructor() {
    super('jd-chart', 260);
  }

  /** The curves are being read from the server. */
  reading(): void {
    this._shown = [];
    this.empty('Reading the learning curves…');
  }

  /**
   * Draw ``trialIds``' curves (at most ``limit``, in the order given: best first), each coloured by its place
   * in that order, or by ``colourOf`` (a PBT run: its segments by lineage).
   */
  draw(
    curves: Curves,
    trialIds: number[],
    { limit = MAX_CURVES, colourOf, labelOf }: ICurveOptions = {}
  ): void {
    const ids = trialIds.slice(0, limit);
    const data = aligned(curves, ids);
    if (!data[0].length) {
      this._shown = [];
      this.empty('No metrics reported yet.');
      return;
    }
    const same =
      ids.length === this._shown.length &&
      ids.every((id, i) => id === this._shown[i]);
    if (this._plot && same) {
      this._plot.setData(data); // new points on the same curves: no new chart
      return;
    }
    this._shown = ids;
    this.plot(
      'step',
      curves.metric ?? '',
      ids.map((id, i) => ({
        label: labelOf ? labelOf(id) : `trial ${id}`,
        stroke: lineColour(colourOf ? colourOf(id) : i),
        width: i === 0 && !colourOf ? 2.5 : 1.25,
        spanGaps: true,
        value: (_u: uPlot, v: number | null) => formatValue(v)
      })),
      data,
      ids.length <= 12
    );
  }
}

/**
 * How big a trial's point is drawn: 7 px for a few hundred trials, smaller as they crowd (at 10,000 the
 * chart's width gives each trial a tenth of a pixel: big points merge into one blot), down to 2 px.
 */
export function pointSize(trials: number): number {
  return Math.max(
    2,
    Math.min(7, Math.round(7 * Math.sqrt(300 / Math.max(1, trials))))
  );
}

// The trials a warm start told (run by earlier experiments): muted, the same grey as Experiment.plot() draws them.
const WARM_START_COLOUR = '#9e9e9e';

/**
 * The objective chart's columns: x (the trials a warm start told, at -n to -1, before the run's own trial 0, then
 * the run's trial ids), then (with ``warm``) the told trials' values, each trial's value if completed, its last if
 * pruned or stopped, and the best so far (the run's own trials only).
 */
export function objectiveData(
  trials: ITrialSummary[],
  mode: Mode,
  warm: IWarmStartPoints | null = null
): uPlot.AlignedData {
  const told = warm?.values ?? [];
  const ids = trials.map(t => t.trial_id).sort((a, b) => a - b);
  const byId = new Map(trials.map(t => [t.trial_id, t]));
  const before = told.map(() => null);
  const completed: (number | null)[] = [...before];
  const early: (number | null)[] = [...before];
  const best: (number | null)[] = [...before];
  let bestSoFar: number | null = null;
  for (const id of ids) {
    const t = byId.get(id) as ITrialSummary;
    const done = t.state === 'completed' && t.value !== null;
    completed.push(done ? t.value : null);
    const endedEarly = t.state === 'pruned' || t.state === 'stopped';
    early.push(endedEarly && t.value !== null ? t.value : null);
    if (done) {
      const v = t.value as number;
      const current: number | null = bestSoFar;
      if (current === null || (mode === 'max' ? v > current : v < current)) {
        bestSoFar = v;
      }
    }
    best.push(bestSoFar);
  }
  const xs = [...told.map((_, i) => i - told.length), ...ids];
  const own = [completed, early, best];
  return warm ? [xs, [...told, ...ids.map(() => null)], ...own] : [xs, ...own];
}

/**
 * Each trial's objective by trial id: completed trials filled, pruned and stopped ones hollow at their last
 * value, and the best so far as a step line; the trials a warm start told (``warm``) grey, before them.
 */
export class ObjectiveChart extends Chart {
  constructor() {
    super('jd-chart jd-objective', 220);
  }

  draw(
    trials: ITrialSummary[],
    metric: string,
    mode: Mode,
    warm: IWarmStartPoints | null = null
  ): void {
    const data = objectiveData(trials, mode, warm);
    const [xs, ...columns] = data;
    if (!columns.some(column => column.some(v => v !== null))) {
      this.empty('No trial has ended yet.');
      return;
    }
    const size = pointSize(xs.length);
    const points = (fill: boolean, colour: string) => ({
      stroke: colour,
      paths: () => null,
      points: {
        show: true,
        size,
        fill: fill ? colour : 'transparent',
        stroke: colour
      }
    });
    this.plot(
      'trial',
      metric,
      [
        ...(warm
          ? [{ label: warm.label, ...points(true, WARM_START_COLOUR) }]
          : []),
        { label: 'completed', ...points(true, PALETTE[0]) },
        {
          label: 'pruned or stopped (last value)',
          ...points(false, PALETTE[1])
        },
        { label: 'best so far', stroke: PALETTE[4], width: 1.5, spanGaps: true }
      ],
      data
    );
  }
}

/** A PBT run's hyperparameter, member by member over the steps: a step line per member. */
export class ScheduleChart extends Chart {
  constructor() {
    super('jd-chart jd-schedule', 160);
  }

  draw(name: string, schedule: ISchedule): void {
    if (!schedule.steps.length) {
      this.empty(`No segment has a numeric ${name} yet.`);
      return;
    }
    this.plot(
      'step',
      name,
      schedule.members.map(member => ({
        label: `member ${member}`,
        stroke: PALETTE[member % PALETTE.length],
        width: 1.25,
        paths: uPlot.paths.stepped?.({ align: 1 }),
        value: (_u: uPlot, v: number | null) => formatValue(v)
      })),
      [schedule.steps, ...schedule.values],
      schedule.members.length <= 12
    );
  }
}

/** A multi-objective search's hypervolume as its trials completed: how much the front has grown. */
export class HypervolumeChart extends Chart {
  constructor() {
    super('jd-chart jd-hypervolume', 180);
  }

  draw(history: number[]): void {
    if (!history.length) {
      this.empty('No trial has completed yet.');
      return;
    }
    this.plot(
      'completed trials',
      'hypervolume',
      [
        {
          label: 'hypervolume',
          stroke: PALETTE[0],
          width: 1.5,
          paths: uPlot.paths.stepped?.({ align: 1 }),
          value: (_u: uPlot, v: number | null) => formatValue(v)
        }
      ],
      [history.map((_, i) => i + 1), history],
      false
    );
  }
}

/** A line of a comparison: an experiment's best value so far at each of its xs. */
export interface ILabelledLine extends ILine {
  label: string;
}

/**
 * Experiments side by side: each one's best value so far as a stepped line (it holds until a trial beats it),
 * coloured by its place in the comparison, over completed trials or over seconds from its start.
 */
export class BestSoFarChart extends Chart {
  constructor(className: string) {
    super(`jd-chart ${className}`, 240);
  }

  draw(
    xLabel: string,
    yLabel: string,
    lines: ILabelledLine[],
    wholeX: boolean
  ): void {
    if (!lines.some(line => line.xs.length)) {
      this.empty('No trial has completed yet.');
      return;
    }
    this.plot(
      xLabel,
      yLabel,
      lines.map((line, i) => ({
        label: line.label,
        stroke: lineColour(i),
        width: 1.5,
        spanGaps: true,
        paths: uPlot.paths.stepped?.({ align: 1 }),
        value: (_u: uPlot, v: number | null) => formatValue(v)
      })),
      alignedLines(lines),
      true,
      wholeX
    );
  }
}
