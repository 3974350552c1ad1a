// @vitest-environment happy-dom
// ExperimentDisplay draws into the DOM, and a click on a header redraws the table: a DOM without a browser.
import { afterEach, describe, expect, it, vi } from 'vitest';

import { Curves } from './curves';
import { ExperimentDisplay, trialsTitle } from './display';
import { detail, trial } from './testing';

// Only the copy button uses it; the package's web components do not load outside a browser's module loader.
vi.mock('@jupyterlab/apputils', () => ({ Clipboard: { copyToSystem() {} } }));

const headers = (display: ExperimentDisplay) =>
  Array.from(display.node.querySelectorAll('.jd-table thead th')).map(
    th => th.textContent
  );

const stateCells = (display: ExperimentDisplay) =>
  Array.from(display.node.querySelectorAll('.jd-table tbody tr')).map(row => [
    row.getAttribute('data-trial'),
    row.children[1].textContent,
    row.lastElementChild?.textContent
  ]);

describe('the trials table', () => {
  it("keeps a data-parallel run's metric as its column's header after a click on a header", () => {
    // A data-parallel run optimises nothing: its column is the metric the curves draw (the first reported).
    const run = detail([trial(0, 'completed', null, {}, { steps: 3 })], {
      kind: 'ddp',
      metric: null,
      mode: null
    });
    const display = new ExperimentDisplay(null);
    display.draw(run, Curves.fromSnapshot({ metric: 'loss', trials: [] }));
    expect(headers(display)).toEqual([
      'trial',
      'state',
      'loss',
      'steps',
      'duration'
    ]);
    const steps =
      display.node.querySelectorAll<HTMLElement>('.jd-table thead th')[3];
    steps.click();
    expect(headers(display)).toEqual([
      'trial',
      'state',
      'loss',
      'steps ▲',
      'duration'
    ]);
  });

  it('says queued for a trial waiting on its worker, with no duration until it begins', () => {
    const now = Date.now() / 1000;
    const run = detail([
      trial(0, 'running', null, {}, { started: now - 60, began: now - 60 }),
      trial(
        1,
        'running',
        null,
        {},
        { started: now - 60, queued: true, began: null }
      )
    ]);
    const display = new ExperimentDisplay(null);
    display.draw(run, new Curves('acc'));
    expect(stateCells(display)).toEqual([
      ['1', 'queued', '–'],
      ['0', 'running', '01:00']
    ]);
    const began = { ...run.trials[1], queued: false, began: now - 5 };
    display.draw({ ...run, trials: [run.trials[0], began] }, new Curves('acc'));
    expect(stateCells(display)).toEqual([
      ['1', 'running', '00:05'],
      ['0', 'running', '01:00']
    ]);
  });
});

describe('how a run ended', () => {
  // A data-parallel run's detail: the view draws no uPlot chart there (happy-dom has no canvas).
  it("shows a failed run's error as an error, and a planned end's message as a note", () => {
    const display = new ExperimentDisplay(null);
    const curves = Curves.fromSnapshot({ metric: 'acc', trials: [] });
    const reached = 'target acc >= 0.9 reached by trial 3 (acc=0.95)';
    display.draw(
      detail([trial(3, 'completed', 0.95, {})], {
        kind: 'ddp',
        metric: null,
        mode: null,
        state: 'completed',
        error: null,
        message: reached
      }),
      curves
    );
    expect(display.node.querySelector('.jd-error')).toBeNull();
    expect(display.node.querySelector('.jd-message')?.textContent).toBe(
      reached
    );
    display.draw(
      detail([trial(0, 'failed', null, {})], {
        kind: 'ddp',
        metric: null,
        mode: null,
        state: 'failed',
        error: 'every trial failed',
        message: 'every trial failed'
      }),
      curves
    );
    expect(display.node.querySelector('.jd-error')?.textContent).toBe(
      'every trial failed'
    );
    expect(display.node.querySelector('.jd-message')).toBeNull();
  });
});

describe('parameter importances', () => {
  afterEach(() => vi.useRealTimers());

  it('are asked for once the curves are in, at most every few seconds while the run goes on, and at its end', async () => {
    vi.useFakeTimers();
    const asked: number[] = [];
    const display = new ExperimentDisplay(null, async () => {
      asked.push(Date.now());
      return {
        evaluator: 'PED-ANOVA',
        completed: 0,
        needed: 5,
        importances: null
      };
    });
    const start = Date.now();
    // Trials that ended failed: nothing for the charts to draw (happy-dom has no canvas), but they end.
    const run = (ended: number, state = 'running') =>
      detail(
        [
          ...Array.from({ length: ended }, (_, i) => trial(i, 'failed', null)),
          trial(ended, 'running', null)
        ],
        { state }
      );
    display.draw(run(0), null); // the detail came first: the curves are being read
    expect(asked).toEqual([]);
    const curves = new Curves('acc');
    for (let ended = 1; ended <= 100; ended++) {
      display.draw(run(ended), curves); // ten polls a second, a trial ended in each
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(asked.length).toBe(3); // at 0, 5 and 10 s, not 100 times
    display.draw(run(101, 'completed'), curves);
    await vi.advanceTimersByTimeAsync(0);
    expect(asked.length).toBe(4); // its end: once more, at once
    expect(asked[3] - start).toBeLessThan(10_200);
    display.draw(run(101, 'completed'), curves);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked.length).toBe(4);
    display.dispose();
  });
});

describe('the trials title', () => {
  it('says how many trials the table lists, and when a saved cell kept fewer than the run had', () => {
    const three = [0, 1, 2].map(i => trial(i, 'completed', i));
    expect(trialsTitle(detail(three))).toBe('Trials (3)');
    expect(trialsTitle(detail(three, { trials_done: 10_000 }))).toBe(
      'Trials: 3 of 10,000 saved in this notebook (the Experiments panel lists them all)'
    );
    // A detail of 0.5 on lists its first page of a run's trials, and says how many there are.
    expect(trialsTitle(detail(three, { trial_count: 100_000 }))).toBe(
      'Trials: 3 of 100,000 listed, best first'
    );
    expect(trialsTitle(detail(three, { trial_count: 3 }))).toBe('Trials (3)');
  });
});

describe('an elastic data-parallel run', () => {
  it('lists each restart with what it redid, and the state cell says how many ranks it goes on with', () => {
    const restart = {
      at: 1_700_000_000,
      why: 'rank 2 (worker tcp://10.0.0.3:4000) lost',
      lost: [2],
      world_before: 3,
      world_after: 2,
      lost_at: 10,
      from_step: 8,
      steps_redone: 2,
      message:
        'rank 2 (worker tcp://10.0.0.3:4000) lost at step 10: continuing on 2 ranks from step 8'
    };
    const grew = {
      ...restart,
      why: 'more workers are free',
      lost: [],
      world_before: 2,
      world_after: 3,
      lost_at: 16,
      from_step: 16,
      steps_redone: 0,
      message: 'more workers are free: continuing on 3 ranks from step 16'
    };
    const display = new ExperimentDisplay(null);
    display.draw(
      detail(
        [
          trial(
            0,
            'running',
            null,
            {},
            { steps: 20, restarts: [restart, grew] }
          )
        ],
        { kind: 'ddp', metric: null, mode: null }
      ),
      Curves.fromSnapshot({ metric: 'loss', trials: [] })
    );
    const items = Array.from(
      display.node.querySelectorAll('.jd-restarts li')
    ).map(li => li.textContent ?? '');
    expect(items).toHaveLength(2);
    expect(items[0]).toContain(restart.message);
    expect(items[0]).toMatch(/· 2 steps redone$/);
    expect(items[1]).toContain(grew.message);
    expect(items[1]).not.toContain('redone');
    expect(stateCells(display)[0][1]).toBe(
      'running · 3 ranks (regrouped 2×, from step 16)'
    );
  });
});
