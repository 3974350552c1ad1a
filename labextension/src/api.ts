/** Calls to the server extension's REST API (jupyter_dist/server/_handlers.py), under the server's base URL. */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  ICurvesPage,
  IExperimentComparison,
  IExperimentDetail,
  IExperimentList,
  ILogs,
  IParamImportances,
  ITrialsPage,
  IUtilizationPage
} from './wire';

/**
 * Call ``<base_url>/jupyter-dist/api/<path>``; its JSON body. A server that could not be reached throws a
 * NetworkError; an answer other than 2xx a ResponseError with the server's message (its handlers answer every
 * error with ``{"message": ...}``).
 */
export async function requestAPI<T>(
  path: string,
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'jupyter-dist/api', path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let body: any = text;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON (a proxy's error page): the text itself is the message.
    }
  }
  if (!response.ok) {
    throw new ServerConnection.ResponseError(
      response,
      typeof body === 'string' ? body : body.message
    );
  }
  return body as T;
}

const experiment = (id: string) => `experiments/${encodeURIComponent(id)}`;

export function listExperiments(limit = 200): Promise<IExperimentList> {
  return requestAPI(`experiments?limit=${limit}`);
}

export function getExperiment(id: string): Promise<IExperimentDetail> {
  return requestAPI(experiment(id));
}

/** The trials each page of GET .../trials holds (the detail has the first: the server's TRIALS_PAGE). */
export const TRIALS_PAGE = 200;

/**
 * A page of an experiment's trials (GET .../trials): best first (the detail's order) or by id, of one state or
 * all.
 */
export function getTrials(
  id: string,
  offset: number,
  limit = TRIALS_PAGE,
  sort: 'best' | 'id' = 'best',
  state: string | null = null
): Promise<ITrialsPage> {
  const only = state === null ? '' : `&state=${encodeURIComponent(state)}`;
  return requestAPI(
    `${experiment(id)}/trials?offset=${offset}&limit=${limit}&sort=${sort}${only}`
  );
}

/**
 * The curves of the trials ``trials`` names ("3,17,40-59,9000-": selection.ts; null: every trial) from their
 * reports after cursor ``since``, thinned to ``points`` each.
 */
export function getCurves(
  id: string,
  trials: string | null,
  points: number,
  since = 0
): Promise<ICurvesPage> {
  const selection =
    trials === null ? '' : `&trials=${encodeURIComponent(trials)}`;
  return requestAPI(
    `${experiment(id)}/curves?points=${points}&since=${since}${selection}`
  );
}

/** What the trials used, sampled about once a second while they ran: the samples after cursor ``since``. */
export function getUtilization(
  id: string,
  since = 0
): Promise<IUtilizationPage> {
  return requestAPI(`${experiment(id)}/utilization?since=${since}`);
}

export function getImportances(id: string): Promise<IParamImportances> {
  return requestAPI(`${experiment(id)}/importances`);
}

export function getLogs(id: string, trialId: number): Promise<ILogs> {
  return requestAPI(`${experiment(id)}/logs/${trialId}`);
}

/** Ask the kernel running experiment ``id`` to stop it (through the store, which the run watches). */
export async function requestStop(id: string): Promise<void> {
  await requestAPI(`${experiment(id)}/stop`, { method: 'POST' });
}

/** Experiments ``ids`` side by side (GET .../compare: computed by the server as jupyter_dist.compare does). */
export function getComparison(ids: string[]): Promise<IExperimentComparison> {
  return requestAPI(
    `compare?experiments=${ids.map(encodeURIComponent).join(',')}`
  );
}
