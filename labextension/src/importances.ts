/**
 * How much each searched parameter mattered for the objective (an HPO run's, computed by the server or saved by
 * the kernel from Optuna's importance evaluator): one bar per parameter, most important first.
 */

import { h, replaceChildren } from './dom';
import type { IParamImportances } from './wire';

/** The rows of the chart: each parameter's name, its share as a percentage, and its bar's width (% of the
 * widest), most important first; empty when there are none yet. */
export function importanceRows(
  report: IParamImportances
): { name: string; percent: number; width: number }[] {
  const entries = Object.entries(report.importances ?? {}).sort(
    (a, b) => b[1] - a[1]
  );
  const top = entries.length ? entries[0][1] : 0;
  return entries.map(([name, share]) => ({
    name,
    percent: Math.round(share * 1000) / 10,
    width: top > 0 ? (100 * share) / top : 0
  }));
}

export class ImportanceChart {
  readonly node = h('div', { class: 'jd-importances' });

  draw(report: IParamImportances | null): void {
    if (!report) {
      replaceChildren(this.node);
      return;
    }
    const rows = importanceRows(report);
    const title = h(
      'h3',
      {},
      `Parameter importances (${report.evaluator}, ${report.completed.toLocaleString('en-US')} completed trials)`
    );
    if (!rows.length) {
      replaceChildren(
        this.node,
        title,
        h(
          'div',
          { class: 'jd-importances-none' },
          report.completed < report.needed
            ? `Shown from ${report.needed} completed trials on.`
            : 'No parameter made a difference the evaluator could measure.'
        )
      );
      return;
    }
    replaceChildren(
      this.node,
      title,
      ...rows.map(row => {
        const bar = h('span', { class: 'jd-importance-bar' });
        bar.style.width = `${row.width}%`;
        return h(
          'div',
          { class: 'jd-importance' },
          h('span', { class: 'jd-importance-name' }, row.name),
          h('span', { class: 'jd-importance-track' }, bar),
          h('span', { class: 'jd-importance-share' }, `${row.percent}%`)
        );
      })
    );
  }
}
