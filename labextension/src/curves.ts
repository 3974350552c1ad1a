/**
 * Learning curves of one metric, per trial, assembled from the server's curves (GET .../curves, thinned), its
 * metric pages read on from their cursor, or a saved snapshot; each curve kept to a bounded number of points.
 */

import type { ICurvesPage, ICurvesSnapshot, IMetricsPage } from './wire';

/** Points per curve a view keeps (and asks the server for): a chart is about a thousand pixels wide. */
export const CURVE_POINTS = 200;

/**
 * ``steps`` and ``values`` cut to at most ``points`` points spread evenly over them, the first and the latest
 * always kept (the server thins the same way: jupyter_dist/store/_curves.py ``thinned``).
 */
export function thinned(
  steps: number[],
  values: number[],
  points: number
): { steps: number[]; values: number[] } {
  const n = steps.length;
  if (n <= points) {
    return { steps, values };
  }
  if (points === 1) {
    return { steps: steps.slice(-1), values: values.slice(-1) };
  }
  const kept = Array.from({ length: points }, (_, i) =>
    Math.round((i * (n - 1)) / (points - 1))
  );
  return { steps: kept.map(i => steps[i]), values: kept.map(i => values[i]) };
}

/**
 * Learning curves of one metric, per trial, growing as metric pages are fetched. A trial that was re-run (a lost
 * worker) starts its curve over from the new attempt's first step: the earlier attempt's points before it are
 * kept, so an attempt that resumed from a checkpoint (its first step N + 1) continues the curve, and one that
 * starts from 0 replaces it. Without a metric (a data-parallel run optimises none) the first one reported is
 * drawn, as in the kernel's view. A curve that reaches twice ``points`` points is thinned back to ``points``
 * (its latest point kept), so a run of any length costs the page a bounded amount of memory and drawing.
 */
export class Curves {
  cursor = 0;
  private _byTrial = new Map<
    number,
    { attempt: number; steps: number[]; values: number[] }
  >();

  constructor(
    public metric: string | null,
    readonly points = CURVE_POINTS
  ) {}

  /** Add a page of reports (GET .../metrics); returns whether any curve changed. */
  add(page: IMetricsPage): boolean {
    let changed = false;
    for (const [trialId, attempt, step, , metrics] of page.rows) {
      if (this.metric === null) {
        this.metric = Object.keys(metrics)[0] ?? null;
      }
      const value = this.metric === null ? null : metrics[this.metric];
      if (value !== null && value !== undefined) {
        changed = this._extend(trialId, attempt, [step], [value]) || changed;
      }
    }
    this.cursor = page.cursor;
    return changed;
  }

  /**
   * Add the points reported since the cursor, per trial (GET .../curves?since=cursor: a few arrays per trial
   * where a metric page has an object per report); returns whether any curve changed.
   */
  addCurves(page: ICurvesPage): boolean {
    let changed = false;
    this.metric ??= page.metric;
    for (const [trialId, attempt, steps, values] of page.trials) {
      const kept = steps.filter((_, i) => values[i] !== null);
      const ys = values.filter(v => v !== null) as number[];
      if (kept.length) {
        changed = this._extend(trialId, attempt, kept, ys) || changed;
      }
    }
    this.cursor = page.cursor;
    return changed;
  }

  /** A trial's curve goes on with the points of ``attempt`` (a later attempt's replace the earlier's from its
   * first step on; an earlier attempt's are stale). */
  private _extend(
    trialId: number,
    attempt: number,
    steps: number[],
    values: number[]
  ): boolean {
    let curve = this._byTrial.get(trialId);
    if (!curve || attempt > curve.attempt) {
      const kept = curve ? curve.steps.findIndex(s => s >= steps[0]) : 0;
      const upTo = kept === -1 ? curve!.steps.length : kept;
      curve = {
        attempt,
        steps: curve ? curve.steps.slice(0, upTo) : [],
        values: curve ? curve.values.slice(0, upTo) : []
      };
      this._byTrial.set(trialId, curve);
    } else if (attempt < curve.attempt) {
      return false;
    }
    for (let i = 0; i < steps.length; i++) {
      curve.steps.push(steps[i]);
      curve.values.push(values[i]);
    }
    if (curve.steps.length >= 2 * this.points) {
      Object.assign(curve, thinned(curve.steps, curve.values, this.points));
    }
    return true;
  }

  /**
   * Curves the server sent (GET .../curves, read on from its ``cursor``) or a cell's output saved (no cursor:
   * nothing follows them).
   */
  static fromSnapshot(
    snapshot: ICurvesSnapshot & { cursor?: number },
    points = CURVE_POINTS
  ): Curves {
    const curves = new Curves(snapshot.metric, points);
    curves.cursor = snapshot.cursor ?? 0;
    for (const [trialId, attempt, steps, values] of snapshot.trials) {
      const kept = { attempt, steps: [] as number[], values: [] as number[] };
      steps.forEach((step, i) => {
        const value = values[i];
        if (value !== null && value !== undefined) {
          kept.steps.push(step);
          kept.values.push(value);
        }
      });
      curves._byTrial.set(trialId, kept);
    }
    return curves;
  }

  trialIds(): number[] {
    return [...this._byTrial.keys()].sort((a, b) => a - b);
  }

  has(trialId: number): boolean {
    return this._byTrial.has(trialId);
  }

  curve(trialId: number): { steps: number[]; values: number[] } | undefined {
    return this._byTrial.get(trialId);
  }
}
