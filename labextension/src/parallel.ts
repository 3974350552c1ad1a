/**
 * Parallel coordinates of the completed trials, drawn as SVG (uPlot has none): one vertical axis per searched
 * parameter and one for the objective; each trial a line across them, the best drawn last, boldest and most
 * opaque. Colours are JupyterLab's CSS variables, so both themes work.
 */

import { IParallelAxis, parallelCoordinates } from './geometry';
import type { ITrialSummary, Mode } from './wire';

const SVG = 'http://www.w3.org/2000/svg';
const HEIGHT = 240;
// Beyond this many lines the chart is a blur (and slow to draw): the best ones are drawn.
export const MAX_LINES = 300;
const PAD = { top: 28, bottom: 24, side: 48 };

function el(tag: string, attrs: Record<string, string | number>): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  return node;
}

export class ParallelChart {
  readonly node: HTMLElement;

  constructor() {
    this.node = document.createElement('div');
    this.node.className = 'jd-chart jd-parallel';
  }

  /** Draw the best MAX_LINES completed trials; how many lines it drew, of how many completed trials. */
  draw(
    trials: ITrialSummary[],
    space: Record<string, any>,
    metric: string,
    mode: Mode
  ): { drawn: number; completed: number } {
    const { axes, lines: all } = parallelCoordinates(
      trials,
      space,
      metric,
      mode
    );
    const lines = all.slice(0, MAX_LINES);
    const counts = { drawn: lines.length, completed: all.length };
    this.node.textContent = '';
    if (!lines.length || axes.length < 2) {
      this.node.textContent = lines.length
        ? 'Nothing was searched: no parameters to compare.'
        : 'No trial has completed yet.';
      return counts;
    }
    const width = Math.max(300, this.node.clientWidth || 600);
    const x = (i: number) =>
      PAD.side + (i * (width - 2 * PAD.side)) / (axes.length - 1);
    const y = (p: number) =>
      PAD.top + (1 - p) * (HEIGHT - PAD.top - PAD.bottom);
    const svg = el('svg', {
      width,
      height: HEIGHT,
      viewBox: `0 0 ${width} ${HEIGHT}`
    });
    // Worst first, so the best lines end on top.
    lines
      .slice()
      .reverse()
      .forEach(line => {
        const rank = lines.indexOf(line) / Math.max(1, lines.length - 1); // 0 best .. 1 worst
        // Each run of points a move then lines: a missing point (an inactive parameter) leaves a gap.
        const path = line.points
          .map((p, i) =>
            p === null
              ? ''
              : `${i && line.points[i - 1] !== null ? 'L' : 'M'}${x(i)},${y(p)}`
          )
          .filter(step => step)
          .join(' ');
        svg.append(
          el('path', {
            d: path,
            fill: 'none',
            class: rank === 0 ? 'jd-parallel-best' : 'jd-parallel-line',
            'stroke-opacity': (0.9 - 0.7 * rank).toFixed(2),
            'data-trial': line.trialId
          })
        );
      });
    axes.forEach((axis: IParallelAxis, i: number) => {
      svg.append(
        el('line', {
          x1: x(i),
          x2: x(i),
          y1: y(0),
          y2: y(1),
          class: 'jd-parallel-axis'
        })
      );
      const title = el('text', {
        x: x(i),
        y: 14,
        'text-anchor': 'middle',
        class: 'jd-parallel-title'
      });
      title.textContent = axis.name;
      svg.append(title);
      for (const tick of axis.ticks) {
        const label = el('text', {
          x: x(i) + 4,
          y: y(tick.at) + 4,
          class: 'jd-parallel-tick'
        });
        label.textContent = tick.label;
        svg.append(label);
      }
    });
    this.node.append(svg);
    return counts;
  }
}
