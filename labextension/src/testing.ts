/** Trials and experiments as the server sends them, for the unit tests (*.test.ts): only the fields a test sets. */

import type {
  IExperimentDetail,
  IExperimentSummary,
  ITrialSummary
} from './wire';

export function trial(
  id: number,
  state: string,
  value: number | null,
  params = {},
  over: Partial<ITrialSummary> = {}
): ITrialSummary {
  return {
    trial_id: id,
    state,
    value,
    params,
    labels: {},
    started: 0,
    queued: false,
    began: 0,
    duration: null,
    steps: 0,
    attempts: 1,
    checkpoint_step: null,
    resumed_from: null,
    last: {},
    error: null,
    result: null,
    ...over
  };
}

export function summary(over: Partial<IExperimentSummary>): IExperimentSummary {
  return {
    id: '20261123-141502-3f9a1c',
    name: 'train',
    kind: 'hpo',
    state: 'running',
    trials_done: 7,
    trials_total: 32,
    metric: 'acc',
    mode: 'max',
    best: 0.975,
    started: 0,
    duration: 1,
    ...over
  };
}

export function detail(
  trials: ITrialSummary[],
  over: Partial<IExperimentDetail> = {}
): IExperimentDetail {
  const listed = summary({});
  return {
    ...listed,
    trials_done: trials.filter(t => t.state !== 'running').length,
    trials_total: trials.length,
    error: null,
    definition: {
      kind: listed.kind,
      name: listed.name,
      metric: listed.metric,
      mode: 'max',
      space: {},
      total: trials.length,
      max_steps: null,
      timeout: null,
      dashboard_link: null,
      id: listed.id,
      created: listed.started,
      details: {}
    },
    best: null,
    trials,
    ...over
  };
}
