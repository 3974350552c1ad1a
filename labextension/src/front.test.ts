// @vitest-environment happy-dom

import { describe, expect, it } from 'vitest';

import { FrontChart } from './front';
import { paretoReport } from './pareto';
import { trial } from './testing';

const point = (id: number, values: number[], names: string[]) =>
  trial(
    id,
    'completed',
    values[0],
    {},
    {
      last: Object.fromEntries(
        names.slice(1).map((n, i) => [n, values[i + 1]])
      ),
      started: id,
      duration: 1
    }
  );

describe('FrontChart', () => {
  it('draws two objectives as points, the front filled and joined by its staircase', () => {
    const objectives = {
      names: ['acc', 'ms'],
      modes: ['max', 'min'] as ('max' | 'min')[]
    };
    const trials = [
      point(0, [0.9, 30], objectives.names),
      point(1, [0.8, 10], objectives.names),
      point(2, [0.7, 20], objectives.names)
    ];
    const chart = new FrontChart();
    chart.draw(paretoReport(trials, objectives), objectives);
    expect(chart.node.querySelectorAll('circle.jd-front-point').length).toBe(2);
    expect(
      chart.node.querySelectorAll('circle.jd-dominated-point').length
    ).toBe(1);
    expect(chart.node.querySelectorAll('path.jd-front-line').length).toBe(1);
    expect(chart.node.textContent).toContain('acc (max)');
  });
  it('draws three objectives as parallel coordinates, a line per trial', () => {
    const objectives = {
      names: ['acc', 'ms', 'mb'],
      modes: ['max', 'min', 'min'] as ('max' | 'min')[]
    };
    const trials = [
      point(0, [0.9, 30, 5], objectives.names),
      point(1, [0.8, 10, 5], objectives.names),
      point(2, [0.7, 40, 6], objectives.names) // dominated by trial 0
    ];
    const chart = new FrontChart();
    chart.draw(paretoReport(trials, objectives), objectives);
    expect(chart.node.querySelectorAll('path.jd-front-line').length).toBe(2);
    expect(chart.node.querySelectorAll('path.jd-dominated-line').length).toBe(
      1
    );
    expect(chart.node.querySelectorAll('line.jd-parallel-axis').length).toBe(3);
  });
  it('says so when no trial has completed', () => {
    const chart = new FrontChart();
    chart.draw(
      { points: [], front: new Set(), history: [] },
      { names: ['a', 'b'], modes: ['max', 'max'] }
    );
    expect(chart.node.textContent).toBe('No trial has completed yet.');
  });
});
