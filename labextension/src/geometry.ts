/**
 * Where the completed trials sit on a parallel-coordinates chart, with no DOM: parallel.ts draws it as SVG.
 */

import { formatParam, formatValue } from './format';
import { sortTrials } from './ordering';
import type { ITrialSummary, Mode } from './wire';

/** One axis of a parallel-coordinates chart: where a value sits on it (0 bottom .. 1 top) and its tick labels. */
export interface IParallelAxis {
  name: string;
  position: (value: unknown) => number | null;
  ticks: { at: number; label: string }[];
}

/**
 * Parallel coordinates of the completed trials: one axis per searched parameter (log-scaled where the space
 * searches on a log scale, a choice's options evenly spaced in their order), then the objective. ``lines``:
 * each completed trial's positions on the axes, best first.
 */
/**
 * The searched space the parallel coordinates draw: the definition's, or, for a run whose space was a function
 * of the trial (define-by-run: its definition keeps none), one read from the trials' parameters (numbers on a
 * numeric axis, anything else as choices, in the order first met).
 */
export function spaceOf(
  space: Record<string, any>,
  trials: ITrialSummary[]
): Record<string, any> {
  if (Object.keys(space).length) {
    return space;
  }
  const seen: Record<string, unknown[]> = {};
  for (const trial of trials) {
    for (const [name, value] of Object.entries(trial.params)) {
      (seen[name] ??= []).push(value);
    }
  }
  const derived: Record<string, any> = {};
  for (const [name, values] of Object.entries(seen)) {
    if (values.every(v => typeof v === 'number')) {
      derived[name] = { uniform: [] };
    } else {
      const keys = [...new Set(values.map(v => JSON.stringify(v)))];
      derived[name] = { choice: keys.map(k => JSON.parse(k)) };
    }
  }
  return derived;
}

export function parallelCoordinates(
  trials: ITrialSummary[],
  space: Record<string, any>,
  metric: string,
  mode: Mode
): {
  axes: IParallelAxis[];
  lines: { trialId: number; points: (number | null)[] }[];
} {
  const done = sortTrials(trials, mode).filter(
    t => t.state === 'completed' && t.value !== null
  );
  const numeric = (
    name: string,
    values: number[],
    log: boolean
  ): IParallelAxis => {
    const f = (v: number) => (log ? Math.log10(v) : v);
    const lo = Math.min(...values.map(f));
    const hi = Math.max(...values.map(f));
    const span = hi - lo || 1;
    const label = (x: number) => formatValue(log ? 10 ** x : x);
    return {
      name,
      position: v =>
        typeof v === 'number' && (!log || v > 0) ? (f(v) - lo) / span : null,
      ticks: [
        { at: 0, label: label(lo) },
        { at: 1, label: label(hi) }
      ]
    };
  };
  const axes: IParallelAxis[] = [];
  for (const [name, spec] of Object.entries(space)) {
    if (spec && Array.isArray(spec.choice)) {
      const options = spec.choice.map((o: unknown) => JSON.stringify(o));
      const step = options.length > 1 ? 1 / (options.length - 1) : 0;
      axes.push({
        name,
        position: v => {
          const i = options.indexOf(JSON.stringify(v));
          return i < 0 ? null : options.length > 1 ? i * step : 0.5;
        },
        ticks: spec.choice.map((o: unknown, i: number) => ({
          at: options.length > 1 ? i * step : 0.5,
          label: formatParam(o)
        }))
      });
    } else if (spec && (spec.uniform || spec.integer)) {
      const values = done
        .map(t => t.params[name])
        .filter((v): v is number => typeof v === 'number');
      if (values.length) {
        axes.push(numeric(name, values, Boolean(spec.log)));
      }
    }
  }
  axes.push(
    numeric(
      metric,
      done.map(t => t.value as number),
      false
    )
  );
  // A parameter a trial was not given (a define-by-run space's inactive one) has no point: its line breaks there.
  const lines = done.map(t => ({
    trialId: t.trial_id,
    points: axes.map((axis, i) =>
      i === axes.length - 1
        ? (axis.position(t.value) ?? 0)
        : axis.position(t.params[axis.name])
    )
  }));
  return { axes, lines };
}
