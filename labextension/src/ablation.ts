/** An ablation study's variants, summarised from its trials as the kernel's ``summary()`` does. */

import type { ITrialSummary, Mode } from './wire';

/** One variant of an ablation study: its completed runs' mean and how much the objective loses without it. */
export interface IAblationRow {
  component: string;
  kind: string;
  mean: number | null;
  impact: number | null; // positive: the component helps (the objective is worse without it)
  n: number;
}

/**
 * An ablation study's variants from its trials (labels ``ablated`` and ``kind``), as the kernel's
 * ``summary()`` computes them: the baseline first, then the components by impact, largest first.
 */
export function ablationRows(
  trials: ITrialSummary[],
  mode: Mode | null
): IAblationRow[] {
  const runs = new Map<string, { kind: string; values: number[] }>();
  for (const t of trials) {
    const component = String(t.labels.ablated ?? '');
    const entry = runs.get(component) ?? {
      kind: String(t.labels.kind ?? ''),
      values: []
    };
    if (t.state === 'completed' && t.value !== null) {
      entry.values.push(t.value);
    }
    runs.set(component, entry);
  }
  const mean = (values: number[]) =>
    values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  const baseline = [...runs.values()].find(r => r.kind === 'baseline');
  const base = baseline ? mean(baseline.values) : null;
  const sign = mode === 'max' ? -1 : 1;
  const rows = [...runs.entries()].map(([component, r]) => {
    const m = mean(r.values);
    return {
      component,
      kind: r.kind,
      mean: m,
      impact:
        m === null || base === null || r.kind === 'baseline'
          ? r.kind === 'baseline'
            ? 0
            : null
          : sign * (m - base),
      n: r.values.length
    };
  });
  return rows.sort((a, b) => {
    if (a.kind === 'baseline' || b.kind === 'baseline') {
      return a.kind === 'baseline' ? -1 : 1;
    }
    return (b.impact ?? -Infinity) - (a.impact ?? -Infinity);
  });
}
