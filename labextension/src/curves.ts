/** Learning curves of one metric, per trial, assembled from the server's metric pages or a saved snapshot. */

import type { ICurvesSnapshot, IMetricsPage } from './wire';

/**
 * Learning curves of one metric, per trial, assembled from metric pages as they are fetched. A trial that was
 * re-run (a lost worker) starts its curve over from the new attempt's first step: the earlier attempt's points
 * before it are kept, so an attempt that resumed from a checkpoint (its first step N + 1) continues the curve,
 * and one that starts from 0 replaces it. Without a metric (a data-parallel run optimises none) the first one
 * reported is drawn, as in the kernel's view.
 */
export class Curves {
  cursor = 0;
  private _byTrial = new Map<
    number,
    { attempt: number; steps: number[]; values: number[] }
  >();

  constructor(public metric: string | null) {}

  /** Add a page; returns whether any curve changed. */
  add(page: IMetricsPage): boolean {
    let changed = false;
    for (const [trialId, attempt, step, , metrics] of page.rows) {
      if (this.metric === null) {
        this.metric = Object.keys(metrics)[0] ?? null;
      }
      const value = this.metric === null ? null : metrics[this.metric];
      if (value === null || value === undefined) {
        continue;
      }
      let curve = this._byTrial.get(trialId);
      if (!curve || attempt > curve.attempt) {
        const kept = curve ? curve.steps.findIndex(s => s >= step) : 0;
        const upTo = kept === -1 ? curve!.steps.length : kept;
        curve = {
          attempt,
          steps: curve ? curve.steps.slice(0, upTo) : [],
          values: curve ? curve.values.slice(0, upTo) : []
        };
        this._byTrial.set(trialId, curve);
      } else if (attempt < curve.attempt) {
        continue;
      }
      curve.steps.push(step);
      curve.values.push(value);
      changed = true;
    }
    this.cursor = page.cursor;
    return changed;
  }

  /** Curves saved in a cell's output. */
  static fromSnapshot(snapshot: ICurvesSnapshot): Curves {
    const curves = new Curves(snapshot.metric);
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

  curve(trialId: number): { steps: number[]; values: number[] } | undefined {
    return this._byTrial.get(trialId);
  }
}
