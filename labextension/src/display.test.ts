// @vitest-environment happy-dom
// ExperimentDisplay draws into the DOM, and a click on a header redraws the table: a DOM without a browser.
import { describe, expect, it, vi } from 'vitest';

import { Curves } from './curves';
import { ExperimentDisplay } from './display';
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
