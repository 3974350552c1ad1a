/** How every view writes numbers, durations, parameters, progress and a trial's state: one way everywhere. */

import type {
  IExperimentDetail,
  IExperimentSummary,
  ITrialSummary
} from './wire';

/** A number as every part of the UI writes it: 4 significant digits, no exponent for ordinary sizes. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) {
    return '–';
  }
  if (Number.isInteger(value)) {
    return String(value);
  }
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e6)) {
    return value.toExponential(3);
  }
  return String(Number(value.toPrecision(4)));
}

/** A parameter value as the summary line in the kernel writes it. */
export function formatParam(value: unknown): string {
  if (typeof value === 'number') {
    return formatValue(value);
  }
  if (typeof value === 'string') {
    return `'${value}'`;
  }
  return JSON.stringify(value);
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '–';
  }
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  return h ? `${h}:${two(m)}:${two(rest)}` : `${two(m)}:${two(rest)}`;
}

/** "7/32", "9,500/10,000" (or "7/?" for a run bounded by a timeout). */
export function progressText(
  e: Pick<IExperimentSummary, 'trials_done' | 'trials_total'>
): string {
  const count = (n: number) => n.toLocaleString('en-US');
  return `${count(e.trials_done)}/${e.trials_total === null ? '?' : count(e.trials_total)}`;
}

/** The status-bar text for the running experiments: "hpo train: 7/32 · best 0.975" (and "+1 more"). */
export function statusText(experiments: IExperimentSummary[]): string {
  const running = experiments.filter(e => e.state === 'running');
  if (!running.length) {
    return '';
  }
  const first = running[0];
  let text = `${first.kind} ${first.name}: ${progressText(first)}`;
  if (first.best !== null) {
    text += ` · best ${formatValue(first.best)}`;
  }
  if (running.length > 1) {
    text += ` · +${running.length - 1} more`;
  }
  return text;
}

/**
 * What the first line of an experiment's view says of early stopping while ASHA, the default pruner, decides
 * (the kernel's views write the same words: widgets/_base.py EARLY_STOPPING_NOTE); null for any other pruner.
 */
export function earlyStoppingNote(
  detail: Pick<IExperimentDetail, 'definition'>
): string | null {
  return detail.definition.details?.pruner === "'asha'"
    ? 'ASHA early stopping · pruner=None to turn it off'
    : null;
}

/** A trial's state as the views say it: a running trial still waiting behind another on its worker is queued. */
export function trialState(t: ITrialSummary): string {
  return t.state === 'running' && t.queued ? 'queued' : t.state;
}

/** The metric's value a trial shows: its objective once it has one, else the latest it reported. */
export function trialValue(t: ITrialSummary, metric: string): number | null {
  return t.value ?? t.last[metric] ?? null;
}

/**
 * How long a trial has run: its duration once it has ended; while it runs, the time since it began (not since
 * it was sent: a queued trial has not begun); none while it is queued.
 */
export function trialDuration(t: ITrialSummary, now: number): number | null {
  if (t.duration !== null) {
    return t.duration;
  }
  if (t.state !== 'running' || t.queued || typeof t.began !== 'number') {
    return null;
  }
  return now - t.began;
}

/** The best trial's parameters as Python keyword arguments, for the copy button. */
export function paramsAsPython(params: Record<string, unknown>): string {
  const py = (v: unknown): string => {
    if (v === null) {
      return 'None';
    }
    if (v === true || v === false) {
      return v ? 'True' : 'False';
    }
    if (typeof v === 'string') {
      return JSON.stringify(v);
    }
    if (Array.isArray(v)) {
      return `[${v.map(py).join(', ')}]`;
    }
    return String(v);
  };
  return Object.entries(params)
    .map(([k, v]) => `${k}=${py(v)}`)
    .join(', ');
}
