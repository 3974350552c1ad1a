// @vitest-environment happy-dom
// The utilisation section draws into the DOM: a DOM without a browser.
import { beforeEach, describe, expect, it, vi } from 'vitest';

import { cpuNote } from './table';
import { detail, trial } from './testing';
import {
  MAX_USAGE_LINES,
  Utilization,
  UtilizationSection,
  usageLines,
  usageTrials
} from './utilization';
import type { IUtilizationPage } from './wire';

// uPlot draws on a canvas, which a DOM without a browser lacks (tests/lab/test_panel.py opens the real view): the
// plots here keep what they were asked to draw.
const plots: { series: string[]; data: unknown[][]; updates: number }[] =
  vi.hoisted(() => []);
vi.mock('uplot', () => ({
  default: class {
    private _plot: { series: string[]; data: unknown[][]; updates: number };
    constructor(options: { series: { label: string }[] }, data: unknown[][]) {
      this._plot = {
        series: options.series.map(s => s.label),
        data,
        updates: 0
      };
      plots.push(this._plot);
    }
    setData(data: unknown[][]) {
      this._plot.data = data;
      this._plot.updates++;
    }
    setSize() {}
    destroy() {}
  }
}));

type Row = IUtilizationPage['rows'][number];
const page = (rows: Row[], cursor: number, more = false): IUtilizationPage => ({
  columns: [
    'trial_id',
    'time',
    'cpu_percent',
    'rss_mb',
    'gpu_util',
    'gpu_mem_mb'
  ],
  rows,
  cursor,
  more
});

describe('Utilization', () => {
  it('gathers samples per trial from incremental pages and moves the cursor', () => {
    const usage = new Utilization();
    expect(usage.latestCpu(0)).toBeNull();
    expect(
      usage.add(
        page(
          [
            [0, 101, 50, 400, null, null],
            [1, 101.5, 90, 410, 80, 2000]
          ],
          2
        )
      )
    ).toBe(true);
    expect(usage.add(page([[0, 102, 99, 420, null, null]], 3))).toBe(true);
    expect(usage.add(page([], 3))).toBe(false);
    expect(usage.cursor).toBe(3);
    expect(usage.trialIds()).toEqual([0, 1]);
    expect(usage.usage(0)).toEqual({
      time: [101, 102],
      cpu: [50, 99],
      rss: [400, 420],
      gpu: [null, null],
      gpuMem: [null, null]
    });
    expect(usage.latestCpu(0)).toBe(99);
    expect(usage.has('gpu')).toBe(true);
    expect(usage.has('cpu')).toBe(true);
  });

  it('thins a long trial back to its bound, keeping its first and newest samples', () => {
    const usage = new Utilization(10);
    const rows: Row[] = Array.from({ length: 20 }, (_, i) => [
      3,
      i,
      i,
      100,
      null,
      null
    ]);
    usage.add(page(rows, 20));
    const kept = usage.usage(3)!;
    expect(kept.time).toHaveLength(10);
    expect(kept.time[0]).toBe(0);
    expect(kept.time[9]).toBe(19);
    expect(kept.cpu).toEqual(kept.time); // the columns thinned alike
    expect(usage.latestCpu(3)).toBe(19);
  });
});

describe('what the charts draw', () => {
  it('draws the running trials first, then the latest to end, at most a dozen', () => {
    const usage = new Utilization();
    const ids = Array.from({ length: 20 }, (_, i) => i);
    usage.add(
      page(
        ids.map(id => [id, 100 + id, 10, 100, null, null] as Row),
        20
      )
    );
    const run = detail(
      ids.map(id =>
        trial(id, id === 2 || id === 5 ? 'running' : 'completed', null)
      )
    );
    const drawn = usageTrials(run, usage);
    expect(drawn).toHaveLength(MAX_USAGE_LINES);
    expect(drawn.slice(0, 4)).toEqual([2, 5, 19, 18]);
  });

  it('puts each trial on seconds since the start', () => {
    const usage = new Utilization();
    usage.add(
      page(
        [
          [0, 1010, 50, 400, null, null],
          [0, 1011, 60, 401, null, null]
        ],
        2
      )
    );
    expect(usageLines(usage, [0, 7], 'rss', 1000)).toEqual([
      { xs: [10, 11], ys: [400, 401] },
      { xs: [], ys: [] }
    ]);
  });

  it("says a running trial's newest CPU % in its state cell", () => {
    const usage = new Utilization();
    usage.add(page([[4, 1, 97.6, 100, null, null]], 1));
    const latest = (id: number) => usage.latestCpu(id);
    expect(cpuNote(trial(4, 'running', null), 'running', latest)).toBe(
      ' · CPU 98%'
    );
    expect(cpuNote(trial(5, 'running', null), 'running', latest)).toBe(''); // no sample yet
    expect(cpuNote(trial(4, 'completed', null), 'completed', latest)).toBe('');
    expect(cpuNote(trial(4, 'running', null), 'running')).toBe(''); // nothing read (a saved cell)
  });
});

describe('UtilizationSection', () => {
  beforeEach(() => {
    plots.length = 0;
  });

  it('says why there is nothing to draw', () => {
    const section = new UtilizationSection();
    section.draw(
      detail([trial(0, 'completed', 1)], { state: 'completed' }),
      new Utilization()
    );
    expect(section.node.textContent).toContain(
      'No utilisation samples: trials shorter than about a second have none.'
    );
    section.draw(detail([trial(0, 'running', null)]), new Utilization());
    expect(section.node.textContent).toContain('No utilisation samples yet');
    expect(plots).toHaveLength(0);
  });

  it('draws CPU and memory, GPU charts only where a trial held one, and new samples on the same chart', () => {
    const section = new UtilizationSection();
    const run = detail([trial(0, 'running', null), trial(1, 'running', null)], {
      started: 100
    });
    const usage = new Utilization();
    usage.add(
      page(
        [
          [0, 101, 50, 400, null, null],
          [1, 101.5, 90, 410, null, null]
        ],
        2
      )
    );
    section.draw(run, usage);
    expect(section.node.querySelectorAll('.jd-usage-chart')).toHaveLength(2);
    expect(plots.map(p => p.series)).toEqual([
      ['seconds since the start', 'trial 0', 'trial 1'],
      ['seconds since the start', 'trial 0', 'trial 1']
    ]);
    expect(plots[0].data).toEqual([
      [1, 1.5],
      [50, null],
      [null, 90]
    ]);
    usage.add(page([[0, 102, 60, 420, null, null]], 3));
    section.draw(run, usage);
    expect(plots).toHaveLength(2); // the same trials: their charts' data replaced, no new chart
    expect(plots[0].updates).toBe(1);
    usage.add(page([[1, 102.5, 70, 430, 85, 1500]], 4));
    section.draw(run, usage);
    expect(section.node.querySelectorAll('.jd-usage-chart')).toHaveLength(4);
    expect(plots.slice(2).map(p => p.data[0])).toEqual([
      [1, 1.5, 2, 2.5],
      [1, 1.5, 2, 2.5]
    ]);
  });
});
