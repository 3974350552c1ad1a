/** Calls to the server extension's REST API (jupyter_dist/server/_handlers.py), under the server's base URL. */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  IExperimentDetail,
  IExperimentList,
  ILogs,
  IMetricsPage
} from './model';

const settings = ServerConnection.makeSettings();

async function get<T>(path: string): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'jupyter-dist/api', path);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, body.message);
  }
  return body as T;
}

export function listExperiments(limit = 200): Promise<IExperimentList> {
  return get(`experiments?limit=${limit}`);
}

export function getExperiment(id: string): Promise<IExperimentDetail> {
  return get(`experiments/${encodeURIComponent(id)}`);
}

export function getMetrics(id: string, since: number): Promise<IMetricsPage> {
  return get(`experiments/${encodeURIComponent(id)}/metrics?since=${since}`);
}

export function getLogs(id: string, trialId: number): Promise<ILogs> {
  return get(`experiments/${encodeURIComponent(id)}/logs/${trialId}`);
}

/** Ask the kernel running experiment ``id`` to stop it (through the store, which the run watches). */
export async function requestStop(id: string): Promise<void> {
  const url = URLExt.join(
    settings.baseUrl,
    'jupyter-dist/api/experiments',
    encodeURIComponent(id),
    'stop'
  );
  const response = await ServerConnection.makeRequest(
    url,
    { method: 'POST' },
    settings
  );
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new ServerConnection.ResponseError(response, body.message);
  }
}
