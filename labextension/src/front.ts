/**
 * The Pareto front of a search with several objectives, drawn as SVG: with two objectives every completed trial
 * as a point (the front's filled, joined by its staircase), with more a parallel-coordinates line per trial (the
 * front's bold). Colours are JupyterLab's CSS variables, as the parallel-coordinates chart's.
 */

import { formatValue } from './format';
import { IObjectives, IParetoReport } from './pareto';

const SVG = 'http://www.w3.org/2000/svg';
const HEIGHT = 260;
const PAD = { top: 16, bottom: 40, left: 64, right: 16 };

function el(tag: string, attrs: Record<string, string | number>): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  return node;
}

function text(
  x: number,
  y: number,
  content: string,
  cls: string,
  anchor = 'middle'
): SVGElement {
  const node = el('text', { x, y, 'text-anchor': anchor, class: cls });
  node.textContent = content;
  return node;
}

/** A linear scale of ``values`` onto [0, 1] (the middle when they are all the same). */
function unit(values: number[]): (v: number) => number {
  const lo = Math.min(...values);
  const span = Math.max(...values) - lo;
  return v => (span ? (v - lo) / span : 0.5);
}

export class FrontChart {
  readonly node = document.createElement('div');

  constructor() {
    this.node.className = 'jd-chart jd-front';
  }

  draw(report: IParetoReport, objectives: IObjectives): void {
    this.node.textContent = '';
    if (!report.points.length) {
      this.node.textContent = 'No trial has completed yet.';
      return;
    }
    const width = Math.max(300, this.node.clientWidth || 600);
    const svg = el('svg', {
      width,
      height: HEIGHT,
      viewBox: `0 0 ${width} ${HEIGHT}`
    });
    if (objectives.names.length === 2) {
      this._scatter(svg, width, report, objectives);
    } else {
      this._parallel(svg, width, report, objectives);
    }
    this.node.append(svg);
  }

  private _scatter(
    svg: SVGElement,
    width: number,
    report: IParetoReport,
    o: IObjectives
  ): void {
    const xs = report.points.map(p => p.values[0]);
    const ys = report.points.map(p => p.values[1]);
    const [fx, fy] = [unit(xs), unit(ys)];
    const x = (v: number) => PAD.left + fx(v) * (width - PAD.left - PAD.right);
    const y = (v: number) =>
      PAD.top + (1 - fy(v)) * (HEIGHT - PAD.top - PAD.bottom);
    for (const [at, anchor] of [
      [Math.min(...xs), 'start'],
      [Math.max(...xs), 'end']
    ] as [number, string][]) {
      svg.append(
        text(x(at), HEIGHT - 22, formatValue(at), 'jd-parallel-tick', anchor)
      );
    }
    for (const at of [Math.min(...ys), Math.max(...ys)]) {
      svg.append(
        text(
          PAD.left - 6,
          y(at) + 4,
          formatValue(at),
          'jd-parallel-tick',
          'end'
        )
      );
    }
    svg.append(
      text(
        (PAD.left + width) / 2,
        HEIGHT - 4,
        `${o.names[0]} (${o.modes[0]})`,
        'jd-parallel-title'
      )
    );
    const yTitle = text(
      14,
      HEIGHT / 2,
      `${o.names[1]} (${o.modes[1]})`,
      'jd-parallel-title'
    );
    yTitle.setAttribute('transform', `rotate(-90 14 ${HEIGHT / 2})`);
    svg.append(yTitle);
    // The front's staircase: sorted by the first objective, each step at the better of the two values.
    const front = report.points
      .filter(p => report.front.has(p.trialId))
      .sort((a, b) => a.values[0] - b.values[0]);
    if (front.length > 1) {
      // Both minimised (or maximised): the front falls, each step goes across then down; one of each: it
      // rises, each step goes up then across.
      const across = o.modes[0] === o.modes[1];
      const path = front
        .map((p, i) => {
          if (i === 0) {
            return `M${x(p.values[0])},${y(p.values[1])}`;
          }
          const prev = front[i - 1];
          return across
            ? `L${x(p.values[0])},${y(prev.values[1])} L${x(p.values[0])},${y(p.values[1])}`
            : `L${x(prev.values[0])},${y(p.values[1])} L${x(p.values[0])},${y(p.values[1])}`;
        })
        .join(' ');
      svg.append(el('path', { d: path, fill: 'none', class: 'jd-front-line' }));
    }
    for (const p of report.points) {
      const onFront = report.front.has(p.trialId);
      const dot = el('circle', {
        cx: x(p.values[0]),
        cy: y(p.values[1]),
        r: onFront ? 4.5 : 3,
        class: onFront ? 'jd-front-point' : 'jd-dominated-point',
        'data-trial': p.trialId
      });
      const title = el('title', {});
      title.textContent = `trial ${p.trialId}: ${o.names
        .map((n, i) => `${n}=${formatValue(p.values[i])}`)
        .join(', ')}`;
      dot.append(title);
      svg.append(dot);
    }
  }

  private _parallel(
    svg: SVGElement,
    width: number,
    report: IParetoReport,
    o: IObjectives
  ): void {
    const scales = o.names.map((_, k) =>
      unit(report.points.map(p => p.values[k]))
    );
    const x = (k: number) =>
      PAD.left + (k * (width - PAD.left - PAD.right)) / (o.names.length - 1);
    const y = (u: number) =>
      PAD.top + 12 + (1 - u) * (HEIGHT - PAD.top - 12 - PAD.bottom);
    // The dominated first, so the front's lines end on top.
    const ordered = [...report.points].sort(
      (a, b) =>
        Number(report.front.has(a.trialId)) -
        Number(report.front.has(b.trialId))
    );
    for (const p of ordered) {
      const path = p.values
        .map((v, k) => `${k ? 'L' : 'M'}${x(k)},${y(scales[k](v))}`)
        .join(' ');
      svg.append(
        el('path', {
          d: path,
          fill: 'none',
          class: report.front.has(p.trialId)
            ? 'jd-front-line'
            : 'jd-dominated-line',
          'data-trial': p.trialId
        })
      );
    }
    o.names.forEach((name, k) => {
      svg.append(
        el('line', {
          x1: x(k),
          x2: x(k),
          y1: y(0),
          y2: y(1),
          class: 'jd-parallel-axis'
        })
      );
      svg.append(
        text(x(k), PAD.top, `${name} (${o.modes[k]})`, 'jd-parallel-title')
      );
      const values = report.points.map(p => p.values[k]);
      for (const at of [Math.min(...values), Math.max(...values)]) {
        svg.append(
          text(
            x(k) + 4,
            y(scales[k](at)) + 4,
            formatValue(at),
            'jd-parallel-tick',
            'start'
          )
        );
      }
    });
  }
}
