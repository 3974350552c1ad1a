/**
 * The trials table: best first, or sorted by a column (a click on its header); a click on a row selects it. Its
 * rows are virtualised (virtual.ts): the table scrolls in a box of its own and only the rows in view, and a margin
 * around them, are in the page, so 10,000 trials cost what a few dozen do, and a redraw at every poll of a live
 * run rebuilds only those.
 */

import { h } from './dom';
import {
  formatDuration,
  formatParam,
  formatValue,
  trialDuration,
  trialState,
  trialValue
} from './format';
import { paramNames, sortByColumn } from './ordering';
import { IRowRange, RowWindow } from './virtual';
import type { ITrialSummary } from './wire';

// Until the page has laid a row out (and where it never does: a hidden tab, the unit tests' DOM): the CSS's
// row height and the box's max-height (style/base.css .jd-trials, .jd-table td).
const ROW_HEIGHT = 22;
const VIEW_HEIGHT = 400;

export interface ITableData {
  trials: ITrialSummary[]; // best first
  metric: string; // the value column's header: the objective, or the metric the curves draw
  best: ITrialSummary | null;
  others?: string[]; // a multi-objective search's objectives beyond the first: a column each, after metric
  latestCpu?: (trialId: number) => number | null; // a running trial's newest CPU % (utilization.ts), if read
}

export class TrialsTable {
  /** The scrolling box the table is drawn in. */
  readonly node = h('div', { class: 'jd-trials' });
  private _space = h('div', { class: 'jd-trials-space' });
  private _table = h('table', { class: 'jd-table' });
  private _head = h('thead');
  private _body = h('tbody');
  private _window = new RowWindow();
  private _data: ITableData | null = null;
  private _rows: ITrialSummary[] = []; // in the order shown
  private _columns: string[] = [];
  private _params: string[] = [];
  private _labels: string[] = [];
  private _widths: number[] = []; // per column, in characters: they only grow, so columns do not jump
  private _sort: { column: string; ascending: boolean } | null = null; // null: best first
  private _selected: number | null = null;
  private _rowHeight = 0;
  private _headHeight = 0;
  private _frame: number | null = null;

  constructor(private _onSelect: ((trialId: number) => void) | null) {
    this._table.append(this._head, this._body);
    this._space.append(this._table);
    this.node.append(this._space);
    this.node.addEventListener('scroll', () => this._onScroll(), {
      passive: true
    });
  }

  /** The trials to show (best first); the sort and selection a user chose are kept. */
  draw(data: ITableData): void {
    this._data = data;
    this._labels = data.trials.length ? Object.keys(data.trials[0].labels) : [];
    this._params = paramNames(data.trials);
    this._columns = [
      'trial',
      ...this._labels,
      'state',
      data.metric,
      ...(data.others ?? []),
      ...this._params,
      'steps',
      'duration'
    ];
    this._order();
    this._drawHead();
    this._window.reset();
    this._drawRows();
  }

  dispose(): void {
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
    }
  }

  /** Rows now in the page (for the tests: it stays bounded however many trials there are). */
  get rendered(): IRowRange | null {
    return this._window.rendered;
  }

  private _order(): void {
    const data = this._data as ITableData;
    const sort = this._sort;
    this._rows = sort
      ? sortByColumn(data.trials, sort.column, data.metric, sort.ascending)
      : data.trials;
  }

  private _drawHead(): void {
    const sort = this._sort;
    this._head.replaceChildren(
      h(
        'tr',
        {},
        ...this._columns.map((name, i) => {
          const mark =
            sort?.column === name ? (sort.ascending ? ' ▲' : ' ▼') : '';
          const cell = h('th', { title: 'Sort by this column' }, name + mark);
          cell.onclick = () => this._sortBy(name);
          this._widen(i, name.length + 2);
          return cell;
        })
      )
    );
  }

  /** A click sorts by a column, a second click reverses, a third goes back to best first. */
  private _sortBy(name: string): void {
    const sort = this._sort;
    if (sort?.column !== name) {
      this._sort = { column: name, ascending: true };
    } else if (sort.ascending) {
      this._sort = { column: name, ascending: false };
    } else {
      this._sort = null;
    }
    this._order();
    this._drawHead();
    this._window.reset();
    this._drawRows();
  }

  private _onScroll(): void {
    if (this._frame === null) {
      this._frame = requestAnimationFrame(() => {
        this._frame = null;
        this._drawRows();
      });
    }
  }

  /** The rows in view (and a margin), if they are not the ones in the page already. */
  private _drawRows(): void {
    const rowHeight = this._rowHeight || ROW_HEIGHT;
    const top = Math.max(0, this.node.scrollTop - this._headHeight);
    const range = this._window.update(
      top,
      this.node.clientHeight || VIEW_HEIGHT,
      rowHeight,
      this._rows.length
    );
    if (!range) {
      return;
    }
    const now = Date.now() / 1000;
    const rows = [];
    for (let i = range.first; i < range.last; i++) {
      rows.push(this._row(this._rows[i], now));
    }
    this._body.replaceChildren(...rows);
    this._space.style.paddingTop = `${range.first * rowHeight}px`;
    this._space.style.height = `${this._headHeight + this._rows.length * rowHeight}px`;
    this._table.querySelectorAll('th').forEach((th, i) => {
      (th as HTMLElement).style.width = `${this._widths[i]}ch`;
    });
    this._measure();
  }

  /** The row and header heights as laid out (once): the scroll geometry rests on them. */
  private _measure(): void {
    if (this._rowHeight || !this.node.isConnected) {
      return;
    }
    const row = this._body.firstElementChild as HTMLElement | null;
    const height = row?.getBoundingClientRect().height ?? 0;
    if (height > 0) {
      this._rowHeight = height;
      this._headHeight = this._head.getBoundingClientRect().height;
      this._window.reset();
      this._drawRows();
    }
  }

  private _widen(column: number, chars: number): void {
    this._widths[column] = Math.max(this._widths[column] ?? 0, chars);
  }

  private _row(t: ITrialSummary, now: number): HTMLElement {
    const data = this._data as ITableData;
    // A running trial shows its latest value and how long it has run so far (a queued one: nothing yet).
    const state = trialState(t);
    const texts = [
      String(t.trial_id),
      ...this._labels.map(l => formatParam(t.labels[l])),
      stateNote(t, state) + cpuNote(t, state, data.latestCpu),
      formatValue(trialValue(t, data.metric)),
      ...(data.others ?? []).map(m => formatValue(t.last[m] ?? null)),
      ...this._params.map(p => (p in t.params ? formatParam(t.params[p]) : '')),
      String(t.steps),
      formatDuration(trialDuration(t, now))
    ];
    const stateColumn = 1 + this._labels.length;
    const row = h(
      'tr',
      {
        class:
          [
            t === data.best ? 'jd-best-row' : '',
            t.trial_id === this._selected ? 'jd-selected' : ''
          ]
            .join(' ')
            .trim() || undefined,
        'data-trial': String(t.trial_id)
      },
      ...texts.map((text, i) => {
        this._widen(i, text.length + 2);
        return h(
          'td',
          i === stateColumn ? { class: `jd-state-${state}` } : {},
          text
        );
      })
    );
    if (this._onSelect) {
      row.onclick = () => this._select(t.trial_id);
    }
    return row;
  }

  private _select(trialId: number): void {
    this._selected = trialId;
    this._window.reset();
    this._drawRows();
    this._onSelect?.(trialId);
  }
}

/** Why a failed trial failed, where the state cell says it (the rest say it in their output). */
const FAILED_BECAUSE: Record<string, string> = {
  memory: 'out of memory',
  lost: 'worker lost'
};

/**
 * "2 trials ran out of memory", for the detail view's header, as the kernel's status line says it (the state cell
 * marks which ones, their parameters beside); null when none did.
 */
export function outOfMemoryText(trials: ITrialSummary[]): string | null {
  const count = trials.filter(t => t.error_kind === 'memory').length;
  if (!count) {
    return null;
  }
  return `${count === 1 ? '1 trial' : `${count} trials`} ran out of memory`;
}

/**
 * The state cell: an elastic data-parallel trial that regrouped says on how many ranks it goes on (its latest
 * restart); a trial that resumed from a checkpoint says from which step; a trial that ran out of memory, or
 * whose workers were lost, says so.
 */
export function stateNote(t: ITrialSummary, state: string): string {
  const because = t.error_kind ? FAILED_BECAUSE[t.error_kind] : undefined;
  if (state === 'failed' && because) {
    return `${state} · ${because}`;
  }
  const restart = t.restarts?.[t.restarts.length - 1];
  if (restart) {
    const times = t.restarts?.length === 1 ? 'once' : `${t.restarts?.length}×`;
    return `${state} · ${restart.world_after} ranks (regrouped ${times}, from step ${restart.from_step})`;
  }
  return resumeIsNews(t)
    ? `${state} · resumed from step ${t.resumed_from}`
    : state;
}

/** A running trial's newest CPU % (of one core), after its state: " · CPU 98%"; nothing before its first sample. */
export function cpuNote(
  t: ITrialSummary,
  state: string,
  latestCpu?: (trialId: number) => number | null
): string {
  const cpu = state === 'running' ? latestCpu?.(t.trial_id) : null;
  return cpu === null || cpu === undefined ? '' : ` · CPU ${Math.round(cpu)}%`;
}

/**
 * Whether the table says a trial resumed from a checkpoint: after a lost worker, a failure or a resumed run; not a
 * PBT segment's planned start from the checkpoint its labels name (Experiment.resume_is_news in the kernel).
 */
export function resumeIsNews(t: ITrialSummary): boolean {
  if (t.resumed_from === null || t.resumed_from === undefined) {
    return false;
  }
  return t.attempts > 1 || t.labels.from_step !== t.resumed_from;
}
