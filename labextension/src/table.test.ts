// @vitest-environment happy-dom
// The trials table in a DOM without a browser (no layout: the table assumes its CSS's row and box heights).
import { describe, expect, it } from 'vitest';

import { outOfMemoryText, stateNote, TrialsTable } from './table';
import { trial } from './testing';
import type { ITrialSummary } from './wire';

const many = (n: number): ITrialSummary[] =>
  Array.from({ length: n }, (_, i) =>
    trial(i, 'completed', ((i * 7919) % n) / n, { lr: i / n }, { steps: 100 })
  ).sort((a, b) => (b.value as number) - (a.value as number)); // best first

const shown = (table: TrialsTable) =>
  Array.from(table.node.querySelectorAll('tbody tr')).map(row =>
    Number(row.getAttribute('data-trial'))
  );

const frame = () => new Promise(resolve => requestAnimationFrame(resolve));

async function scrollTo(table: TrialsTable, top: number): Promise<void> {
  table.node.scrollTop = top;
  table.node.dispatchEvent(new Event('scroll'));
  await frame();
}

describe('the virtualised trials table', () => {
  it('has only the rows in view and a margin in the page, whatever the number of trials', () => {
    const trials = many(10_000);
    const table = new TrialsTable(null);
    document.body.append(table.node);
    table.draw({ trials, metric: 'acc', best: trials[0] });
    const rows = shown(table);
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.length).toBeLessThan(100);
    expect(rows.slice(0, 3)).toEqual(trials.slice(0, 3).map(t => t.trial_id));
    expect(table.node.querySelector('tbody tr')?.className).toBe('jd-best-row');
    // The box is as tall as all the rows would be, so its scrollbar is the whole table's.
    const space = table.node.querySelector('.jd-trials-space') as HTMLElement;
    expect(parseFloat(space.style.height)).toBe(10_000 * 22);
  });

  it('scrolls to the last trial, sorted by a column, rendering only what comes into view', async () => {
    const trials = many(10_000);
    const table = new TrialsTable(null);
    document.body.append(table.node);
    table.draw({ trials, metric: 'acc', best: trials[0] });
    (table.node.querySelectorAll('thead th')[0] as HTMLElement).click(); // by trial id
    expect(shown(table)[0]).toBe(0);
    await scrollTo(table, 5000 * 22);
    const middle = shown(table);
    expect(middle).toContain(5000);
    expect(middle.length).toBeLessThan(100);
    const space = table.node.querySelector('.jd-trials-space') as HTMLElement;
    expect(parseFloat(space.style.paddingTop)).toBe(middle[0] * 22); // the rows sit where they scroll to
    await scrollTo(table, 10_000 * 22);
    const end = shown(table);
    expect(end[end.length - 1]).toBe(9999);
    expect(end.length).toBeLessThan(100);
  });

  it('keeps its place, its sort and the row selected when a live run draws it again', async () => {
    const selected: number[] = [];
    const table = new TrialsTable(id => selected.push(id));
    document.body.append(table.node);
    let trials = many(2000);
    table.draw({ trials, metric: 'acc', best: trials[0] });
    (table.node.querySelectorAll('thead th')[0] as HTMLElement).click();
    await scrollTo(table, 1000 * 22);
    (table.node.querySelector('tr[data-trial="1003"]') as HTMLElement).click();
    expect(selected).toEqual([1003]);
    trials = [...trials, trial(2000, 'running', null, { lr: 1 })];
    table.draw({ trials, metric: 'acc', best: trials[0] });
    expect(table.node.scrollTop).toBe(1000 * 22);
    expect(shown(table)).toContain(1003);
    expect(
      table.node.querySelector('tr[data-trial="1003"]')?.className
    ).toContain('jd-selected');
    expect(table.node.querySelector('thead th')?.textContent).toBe('trial ▲');
  });
});

describe('why a trial failed', () => {
  it('is said in the state cell for running out of memory and lost workers, and counted for the header', () => {
    const oom = trial(
      1,
      'failed',
      null,
      { batch: 512 },
      { error_kind: 'memory' }
    );
    const lost = trial(2, 'failed', null, {}, { error_kind: 'lost' });
    const raised = trial(3, 'failed', null, {}, { error_kind: 'trial' });
    expect(stateNote(oom, 'failed')).toBe('failed · out of memory');
    expect(stateNote(lost, 'failed')).toBe('failed · worker lost');
    expect(stateNote(raised, 'failed')).toBe('failed');
    expect(outOfMemoryText([oom, lost, raised])).toBe(
      '1 trial ran out of memory'
    );
    expect(outOfMemoryText([lost, raised])).toBeNull();
  });
});
