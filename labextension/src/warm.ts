/**
 * The trials hpo(warm_start=) told a search's sampler first (its definition's details.warm_start): run by earlier
 * experiments, not by this one, so the objective chart draws them apart, in grey, before the run's own trial 0 (as
 * Experiment.plot() does: jupyter_dist/experiment/_plots.py warm_start_trace).
 */

import type { IExperimentDetail } from './wire';

/**
 * One trial told, as the kernel keeps it (jupyter_dist/search/_warm_start.py warm_start()): the definition's
 * details are free-form on the wire, so only what this module reads is typed.
 */
interface IToldTrial {
  experiment: string;
  trial_id: number;
  state: string; // completed or pruned
  values: number[] | null;
  curve: [number, number][];
}

/** The warm start's trials with a value of the objective, in the order they were told, and their legend name. */
export interface IWarmStartPoints {
  label: string;
  values: number[];
}

/**
 * What ``d``'s warm start draws: each told trial's value (a completed one's, a pruned one's last), or null for a
 * run not warm-started or one of several objectives (the front's views draw the run's own trials only).
 */
export function warmStartPoints(d: IExperimentDetail): IWarmStartPoints | null {
  const warm = d.definition.details?.warm_start as
    { from: string[]; trials: IToldTrial[] } | undefined;
  if (!warm?.trials?.length || (d.definition.objectives?.length ?? 1) > 1) {
    return null;
  }
  const values: number[] = [];
  for (const told of warm.trials) {
    const value =
      told.state === 'completed'
        ? (told.values?.[0] ?? null)
        : (told.curve[told.curve.length - 1]?.[1] ?? null);
    if (value !== null) {
      values.push(value);
    }
  }
  if (!values.length) {
    return null;
  }
  const names = warm.from.map(name => `'${name}'`).join(', ');
  return { label: `warm start (${values.length} from ${names})`, values };
}
