/** The order trials are listed in: best first by default, or by a column of the trials table. */

import { trialState, trialValue } from './format';
import type { IExperimentDetail, ITrialSummary, Mode } from './wire';

/** Parameter names in the order the first trial that has them lists them (the search space's order). */
export function paramNames(trials: ITrialSummary[]): string[] {
  const names: string[] = [];
  for (const t of trials) {
    for (const name of Object.keys(t.params)) {
      if (!names.includes(name)) {
        names.push(name);
      }
    }
  }
  return names;
}

/**
 * The detail with its parameters in `order`, the search space's: a saved notebook's JSON has every object's keys
 * sorted, so the kernel saves the order beside its snapshot. Names not in `order` keep their order, after it.
 */
export function inParamOrder(
  detail: IExperimentDetail,
  order: string[] | undefined
): IExperimentDetail {
  if (!order?.length) {
    return detail;
  }
  const rank = (name: string) => {
    const i = order.indexOf(name);
    return i < 0 ? order.length : i;
  };
  const ordered = <T>(o: Record<string, T>): Record<string, T> =>
    Object.fromEntries(Object.entries(o).sort(([a], [b]) => rank(a) - rank(b)));
  return {
    ...detail,
    definition: {
      ...detail.definition,
      space: ordered(detail.definition.space)
    },
    best: detail.best && {
      ...detail.best,
      params: ordered(detail.best.params)
    },
    trials: detail.trials.map(t => ({ ...t, params: ordered(t.params) }))
  };
}

/**
 * Trials best first: completed ones by value (the objective's direction), then running ones (newest first),
 * then the rest by id. Without an objective (a data-parallel run) by id.
 */
export function sortTrials(
  trials: ITrialSummary[],
  mode: Mode | null
): ITrialSummary[] {
  const rank = (t: ITrialSummary) =>
    t.state === 'completed' && t.value !== null
      ? 0
      : t.state === 'running'
        ? 1
        : 2;
  return [...trials].sort((a, b) => {
    if (mode === null) {
      return a.trial_id - b.trial_id;
    }
    const byRank = rank(a) - rank(b);
    if (byRank !== 0) {
      return byRank;
    }
    if (rank(a) === 0) {
      const diff = (a.value as number) - (b.value as number);
      return mode === 'max' ? -diff : diff;
    }
    return rank(a) === 1 ? b.trial_id - a.trial_id : a.trial_id - b.trial_id;
  });
}

/** The best completed trial, or null. */
export function bestTrial(
  trials: ITrialSummary[],
  mode: Mode | null
): ITrialSummary | null {
  if (mode === null) {
    return null;
  }
  const first = sortTrials(trials, mode)[0];
  return first && first.state === 'completed' && first.value !== null
    ? first
    : null;
}

/** The value a trials-table column shows for a trial, for sorting by that column. */
export function columnValue(
  t: ITrialSummary,
  column: string,
  metric: string
): number | string | null {
  switch (column) {
    case 'trial':
      return t.trial_id;
    case 'state':
      return trialState(t);
    case 'steps':
      return t.steps;
    case 'duration':
      return t.duration;
    case metric:
      return trialValue(t, metric);
  }
  const v =
    column in t.params
      ? t.params[column]
      : column in t.labels
        ? t.labels[column]
        : t.last[column]; // another objective of a multi-objective search
  return typeof v === 'number' || typeof v === 'string'
    ? v
    : v === undefined
      ? null
      : JSON.stringify(v);
}

/** ``trials`` sorted by one column (missing values last, whichever the direction). */
export function sortByColumn(
  trials: ITrialSummary[],
  column: string,
  metric: string,
  ascending: boolean
): ITrialSummary[] {
  return [...trials].sort((a, b) => {
    const x = columnValue(a, column, metric);
    const y = columnValue(b, column, metric);
    if (x === null || y === null) {
      return x === y ? 0 : x === null ? 1 : -1;
    }
    const order = x < y ? -1 : x > y ? 1 : 0;
    return ascending ? order : -order;
  });
}
