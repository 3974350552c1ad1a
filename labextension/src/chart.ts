/**
 * Learning curves drawn with uPlot (about 50 KB, bundled with the extension, so it is loaded once with
 * JupyterLab). Colours come from JupyterLab's CSS variables, so the chart follows the light and dark themes.
 */

import uPlot from 'uplot';

import { Curves, formatValue, ITrial, Mode } from './model';

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

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

/** Rows of x (the union of steps) and one y column per trial, null where a trial has no point. */
export function aligned(curves: Curves, trialIds: number[]): uPlot.AlignedData {
  const steps = new Set<number>();
  for (const id of trialIds) {
    curves.curve(id)?.steps.forEach(s => steps.add(s));
  }
  const xs = [...steps].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const columns = trialIds.map(id => {
    const ys: (number | null)[] = new Array(xs.length).fill(null);
    const curve = curves.curve(id);
    curve?.steps.forEach((s, i) => {
      ys[index.get(s) as number] = curve.values[i];
    });
    return ys;
  });
  return [xs, ...columns];
}

export class CurveChart {
  readonly node: HTMLElement;
  private _plot: uPlot | null = null;
  private _shown: number[] = [];

  constructor() {
    this.node = document.createElement('div');
    this.node.className = 'jd-chart';
  }

  /** Draw ``trialIds``' curves (at most MAX_CURVES, in the order given: best first). */
  draw(curves: Curves, trialIds: number[]): void {
    const ids = trialIds.slice(0, MAX_CURVES);
    const data = aligned(curves, ids);
    if (!data[0].length) {
      this.node.textContent = 'No metrics reported yet.';
      this._plot?.destroy();
      this._plot = null;
      return;
    }
    const width = Math.max(200, this.node.clientWidth || 600);
    if (
      this._plot &&
      ids.length === this._shown.length &&
      ids.every((id, i) => id === this._shown[i])
    ) {
      this._plot.setData(data);
      return;
    }
    this._plot?.destroy();
    this.node.textContent = '';
    this._shown = ids;
    const text = cssVar('--jp-ui-font-color2', '#616161');
    const grid = cssVar('--jp-border-color2', '#e0e0e0');
    const axis = {
      stroke: text,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid }
    };
    this._plot = new uPlot(
      {
        width,
        height: 260,
        legend: { show: ids.length <= 12 },
        scales: { x: { time: false } },
        axes: [
          { ...axis, label: 'step' },
          {
            ...axis,
            label: curves.metric ?? '',
            values: (_u, values) => values.map(v => formatValue(v))
          }
        ],
        series: [
          { label: 'step' },
          ...ids.map((id, i) => ({
            label: `trial ${id}`,
            stroke: PALETTE[i % PALETTE.length],
            width: i === 0 ? 2.5 : 1.25,
            spanGaps: true,
            value: (_u: uPlot, v: number | null) => formatValue(v)
          }))
        ]
      },
      data,
      this.node
    );
  }

  resize(width: number): void {
    this._plot?.setSize({ width: Math.max(200, width), height: 260 });
  }

  dispose(): void {
    this._plot?.destroy();
    this._plot = null;
  }
}

/**
 * Each trial's objective by trial id: completed trials filled, pruned and stopped ones hollow at their last
 * value, and the best so far as a step line.
 */
export class ObjectiveChart {
  readonly node: HTMLElement;
  private _plot: uPlot | null = null;

  constructor() {
    this.node = document.createElement('div');
    this.node.className = 'jd-chart jd-objective';
  }

  draw(trials: ITrial[], metric: string, mode: Mode): void {
    const ids = trials.map(t => t.trial_id).sort((a, b) => a - b);
    const byId = new Map(trials.map(t => [t.trial_id, t]));
    const completed: (number | null)[] = [];
    const early: (number | null)[] = [];
    const best: (number | null)[] = [];
    let bestSoFar: number | null = null;
    for (const id of ids) {
      const t = byId.get(id) as ITrial;
      const done = t.state === 'completed' && t.value !== null;
      completed.push(done ? t.value : null);
      early.push(
        (t.state === 'pruned' || t.state === 'stopped') && t.value !== null
          ? t.value
          : null
      );
      if (done) {
        const v = t.value as number;
        bestSoFar =
          bestSoFar === null || (mode === 'max' ? v > bestSoFar : v < bestSoFar)
            ? v
            : bestSoFar;
      }
      best.push(bestSoFar);
    }
    this._plot?.destroy();
    this._plot = null;
    this.node.textContent = '';
    if (!completed.some(v => v !== null) && !early.some(v => v !== null)) {
      this.node.textContent = 'No trial has ended yet.';
      return;
    }
    const text = cssVar('--jp-ui-font-color2', '#616161');
    const grid = cssVar('--jp-border-color2', '#e0e0e0');
    const axis = {
      stroke: text,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid }
    };
    const points = (fill: boolean, colour: string) => ({
      paths: () => null,
      points: {
        show: true,
        size: 7,
        fill: fill ? colour : 'transparent',
        stroke: colour
      }
    });
    this._plot = new uPlot(
      {
        width: Math.max(200, this.node.clientWidth || 600),
        height: 220,
        scales: { x: { time: false } },
        axes: [
          { ...axis, label: 'trial' },
          {
            ...axis,
            label: metric,
            values: (_u, vs) => vs.map(v => formatValue(v))
          }
        ],
        series: [
          { label: 'trial' },
          {
            label: 'completed',
            stroke: PALETTE[0],
            ...points(true, PALETTE[0])
          },
          {
            label: 'pruned or stopped (last value)',
            stroke: PALETTE[1],
            ...points(false, PALETTE[1])
          },
          {
            label: 'best so far',
            stroke: PALETTE[4],
            width: 1.5,
            spanGaps: true
          }
        ]
      },
      [ids, completed, early, best],
      this.node
    );
  }

  resize(width: number): void {
    this._plot?.setSize({ width: Math.max(200, width), height: 220 });
  }

  dispose(): void {
    this._plot?.destroy();
    this._plot = null;
  }
}
