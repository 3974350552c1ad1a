/**
 * A search with several objectives as the views draw it: its Pareto front and the hypervolume the front
 * dominated as trials completed, computed here from the trials (a trial's value is its first objective's, its
 * ``last`` metrics hold the others), as jupyter_dist/experiment/_pareto.py computes them for exp.pareto.
 */

import type { IExperimentDetail, ITrialSummary, Mode } from './wire';

export interface IObjectives {
  names: string[];
  modes: Mode[];
}

/** The run's objectives when it has several; null for one (or none). */
export function objectivesOf(detail: IExperimentDetail): IObjectives | null {
  const listed = detail.definition.objectives;
  if (!listed || listed.length < 2) {
    return null;
  }
  return { names: listed.map(o => o[0]), modes: listed.map(o => o[1]) };
}

export interface IParetoReport {
  points: { trialId: number; values: number[] }[]; // the completed trials that meet their constraints
  front: Set<number>; // trial ids
  history: number[]; // the front's hypervolume after each point, in the order they completed
}

// The hypervolume's reference point lies this share of each objective's range beyond its worst value.
const REFERENCE_MARGIN = 0.1;

/** ``values`` with maximised objectives negated: smaller is better in each. */
export function minimised(values: number[], modes: Mode[]): number[] {
  return values.map((v, i) => (modes[i] === 'max' ? -v : v));
}

function dominatesWeakly(a: number[], b: number[]): boolean {
  return a.every((x, i) => x <= b[i]);
}

/** (Minimised.) The indices of the vectors no other beats in every objective. */
export function nonDominated(vectors: number[][]): number[] {
  return vectors
    .map((v, i) => i)
    .filter(
      i =>
        !vectors.some(
          (w, j) =>
            j !== i &&
            dominatesWeakly(w, vectors[i]) &&
            w.some((x, k) => x < vectors[i][k])
        )
    );
}

/**
 * (Minimised.) The volume the vectors dominate below ``reference``: exact, by sweeping the first objective and
 * slicing the others (two objectives: a staircase; more: slices of one dimension less).
 */
export function hypervolume(vectors: number[][], reference: number[]): number {
  const inside = vectors.filter(v => v.every((x, i) => x < reference[i]));
  if (!inside.length) {
    return 0;
  }
  const d = reference.length;
  if (d === 1) {
    return reference[0] - Math.min(...inside.map(v => v[0]));
  }
  // Sweep the last objective: between consecutive values, the volume of the points at or below it, one
  // dimension less.
  const sorted = [...inside].sort((a, b) => a[d - 1] - b[d - 1]);
  let volume = 0;
  for (let i = 0; i < sorted.length; i++) {
    const top = i + 1 < sorted.length ? sorted[i + 1][d - 1] : reference[d - 1];
    const depth = top - sorted[i][d - 1];
    if (depth > 0) {
      const slice = sorted.slice(0, i + 1).map(v => v.slice(0, d - 1));
      volume += depth * hypervolume(slice, reference.slice(0, d - 1));
    }
  }
  return volume;
}

function feasible(t: ITrialSummary): boolean {
  return !t.constraints || t.constraints.every(c => c <= 0);
}

/** Each objective's value of a completed trial, or null when one is missing. */
export function valuesOf(
  t: ITrialSummary,
  objectives: IObjectives
): number[] | null {
  const values = objectives.names.map((name, i) =>
    i === 0 ? t.value : (t.last[name] ?? null)
  );
  return values.every(v => typeof v === 'number' && Number.isFinite(v))
    ? (values as number[])
    : null;
}

export function paretoReport(
  trials: ITrialSummary[],
  objectives: IObjectives
): IParetoReport {
  const ended = (t: ITrialSummary) => t.started + (t.duration ?? 0);
  const points = trials
    .filter(t => t.state === 'completed' && feasible(t))
    .sort((a, b) => ended(a) - ended(b) || a.trial_id - b.trial_id)
    .map(t => ({ trialId: t.trial_id, values: valuesOf(t, objectives) }))
    .filter(
      (p): p is { trialId: number; values: number[] } => p.values !== null
    );
  const minimal = points.map(p => minimised(p.values, objectives.modes));
  const front = new Set(nonDominated(minimal).map(i => points[i].trialId));
  const history: number[] = [];
  if (points.length) {
    const worst = objectives.names.map((_, k) =>
      Math.max(...minimal.map(v => v[k]))
    );
    const best = objectives.names.map((_, k) =>
      Math.min(...minimal.map(v => v[k]))
    );
    const reference = worst.map(
      (w, k) => w + REFERENCE_MARGIN * (w - best[k] || Math.abs(w) || 1)
    );
    let found: number[][] = [];
    let volume = 0;
    for (const vector of minimal) {
      if (!found.some(f => dominatesWeakly(f, vector))) {
        found = [...found.filter(f => !dominatesWeakly(vector, f)), vector];
        volume = hypervolume(found, reference);
      }
      history.push(volume);
    }
  }
  return { points, front, history };
}
