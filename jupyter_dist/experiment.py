"""Experiment: the live record of a run — trials, streamed metrics, logs — and its DataFrames and plots.

It is the scheduler's *sink*: ``report``/``log`` are called on the Dask IO thread as events arrive,
``trial_started``/``trial_finished`` on the kernel's main thread. Views read it; they never write to it.
"""

from __future__ import annotations

import html
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Experiment", "TrialRecord", "Best", "ExperimentFailed", "MetricError"]

FINAL_STATES = ("completed", "pruned", "failed", "stopped")


class ExperimentFailed(RuntimeError):
    """Every trial failed, or the experiment could not go on; ``.experiment`` keeps what was recorded."""

    def __init__(self, message: str, experiment: Experiment) -> None:
        super().__init__(message)
        self.experiment = experiment


class MetricError(ValueError):
    """The training function neither returns nor reports the metric the experiment optimises."""


@dataclass
class TrialRecord:
    trial_id: int
    params: dict[str, Any]
    state: str = "running"
    value: float | None = None
    started: float = field(default_factory=time.time)
    duration: float | None = None
    steps: int = 0
    attempts: int = 0
    last: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    # What the trial is, beyond its parameters (an ablation study's left-out component, its repeat).
    labels: dict[str, Any] = field(default_factory=dict)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    # The objective's learning curve of the current attempt, for live plots.
    curve_steps: list[int] = field(default_factory=list)
    curve_values: list[float] = field(default_factory=list)
    # Pruning: when the kernel decided to stop it, and when report() raised TrialPruned on the worker.
    prune_decided_at: float | None = None
    stopped_at: float | None = None
    # A data-parallel trial's return values, whole: rank 0's, and every rank's in rank order.
    result: Any = None
    rank_results: list | None = None
    _attempt_ids: dict[str, int] = field(default_factory=dict, repr=False)

    def attempt_number(self, attempt: str) -> int:
        number = self._attempt_ids.get(attempt)
        if number is None:
            number = self._attempt_ids[attempt] = len(self._attempt_ids)
            self.attempts = number + 1
            if number:  # a worker died and Dask re-ran the trial: its curve starts over
                self.curve_steps, self.curve_values = [], []
                for stream in (self.stdout, self.stderr):
                    stream.append(f"\n--- attempt {number + 1} (the previous worker was lost) ---\n")
        return number

    @property
    def logs(self) -> str:
        """Captured stdout, then stderr, then the traceback if the trial failed."""
        parts = ["".join(self.stdout), "".join(self.stderr), self.error or ""]
        return "\n".join(p.rstrip("\n") for p in parts if p)


@dataclass(frozen=True)
class Best:
    trial_id: int
    value: float
    params: dict[str, Any]


class Experiment:
    def __init__(
        self,
        kind: str,
        name: str,
        metric: str,
        mode: str,
        space: dict[str, Any] | None = None,
        total: int | None = None,
        dashboard_link: str | None = None,
        max_steps: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex[:10]
        self.kind = kind
        self.name = name
        self.metric = metric
        # The metric drawn as learning curves: the objective, or (data-parallel runs need none) the first reported.
        self.curve_metric = metric
        self.mode = mode
        self.space = dict(space or {})
        self.total = total
        self.dashboard_link = dashboard_link
        self.max_steps = max_steps
        self.timeout = timeout
        self.state = "running"
        self.error: str | None = None
        self.started = time.time()
        self.ended: float | None = None
        self._trials: dict[int, TrialRecord] = {}
        self._best: TrialRecord | None = None
        self._lock = threading.Lock()
        # Report batches as they arrived: (trial_id, attempt, [[step, metrics, sent_at], ...]). Kept whole so
        # recording costs one append per batch; .history flattens them when asked.
        self._batches: list[tuple[int, int, list]] = []
        self._report_listeners: list[Callable] = []
        self._stop: Callable[[], None] | None = None

    # --- what users read ---------------------------------------------------------------------------------
    @property
    def best(self) -> Best:
        """The best completed trial so far."""
        if self._best is None:
            raise ValueError(f"experiment {self.name!r} has no completed trial yet (state: {self.state})")
        rec = self._best
        return Best(trial_id=rec.trial_id, value=rec.value, params=dict(rec.params))

    @property
    def trials(self):
        """One row per trial: trial_id, [labels...], state, value, params_<name>..., duration, steps, error."""
        import pandas as pd

        rows = []
        for rec in self.trial_records():
            row = {"trial_id": rec.trial_id, **rec.labels, "state": rec.state, "value": rec.value}
            row.update({f"params_{k}": v for k, v in rec.params.items()})
            row.update(duration=rec.duration, steps=rec.steps, attempts=rec.attempts, error=rec.error)
            rows.append(row)
        columns = ["trial_id", "state", "value", "duration", "steps", "attempts", "error"]
        frame = pd.DataFrame(rows, columns=None if rows else columns)
        # pandas would store a missing traceback as NaN in a string column; the contract says None.
        frame["error"] = pd.Series([r["error"] for r in rows], dtype=object, index=frame.index)
        return frame

    @property
    def history(self):
        """One row per reported metric: trial_id, attempt, step, metric, value, time (when it was reported)."""
        import pandas as pd

        with self._lock:
            batches = list(self._batches)
        rows = [
            (trial_id, attempt, step, name, value, sent_at)
            for trial_id, attempt, batch in batches
            for step, metrics, sent_at in batch
            for name, value in metrics.items()
        ]
        frame = pd.DataFrame(rows, columns=["trial_id", "attempt", "step", "metric", "value", "time"])
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        return frame

    @property
    def reports(self) -> int:
        """How many report() calls have arrived so far."""
        return sum(len(batch) for _, _, batch in self._batches)

    def logs(self, trial_id: int) -> str:
        """What a trial printed (stdout, stderr) and its traceback if it failed."""
        return self._trials[trial_id].logs

    def trial_records(self) -> list[TrialRecord]:
        return [self._trials[k] for k in sorted(self._trials)]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("running",) + FINAL_STATES, 0)
        for rec in list(self._trials.values()):
            counts[rec.state] += 1
        return counts

    def compute(self) -> dict[str, float]:
        """Compute used so far: reported steps and trial-seconds, all trials; and, with ``max_steps``, the
        share of steps saved against running every finished trial to ``max_steps``."""
        now = time.time()
        records = list(self._trials.values())
        used = {
            "steps": sum(r.steps for r in records),
            "trial_seconds": sum(r.duration if r.duration is not None else now - r.started for r in records),
        }
        finished = [r for r in records if r.state != "running"]
        if self.max_steps and finished:
            full = len(finished) * self.max_steps
            used["saved"] = max(0.0, 1 - sum(min(r.steps, self.max_steps) for r in finished) / full)
        return used

    @property
    def elapsed(self) -> float:
        return (self.ended or time.time()) - self.started

    def plot(self):
        """A plotly figure: learning curves, objective over trials, parallel coordinates of the parameters."""
        from .plots import experiment_figure

        return experiment_figure(self)

    def stop(self) -> None:
        """Stop gracefully: no new trials, running ones told to stop, finished ones kept. Safe from any thread."""
        if self._stop is not None and self.state == "running":
            self._stop()

    def add_report_listener(self, listener: Callable[[int, list], None]) -> None:
        """Call ``listener(trial_id, reports)`` as reports arrive, ``reports`` a list of
        ``[step, metrics, sent_at]``; on the Dask IO thread, so it must be quick and must not draw."""
        self._report_listeners.append(listener)

    # --- the scheduler's sink ----------------------------------------------------------------------------
    def trial_started(self, trial_id: int, params: dict[str, Any]) -> None:
        self._trials[trial_id] = TrialRecord(trial_id, dict(params), labels=self.labels_of(trial_id))

    def labels_of(self, trial_id: int) -> dict[str, Any]:
        """What a trial is beyond its parameters; HPO trials are only their parameters."""
        return {}

    def trial_pruned(self, trial_id: int) -> None:
        self._trials[trial_id].prune_decided_at = time.time()

    def reports_arrived(self, trial_id: int, attempt: str, batch: list) -> None:
        rec = self._trials.get(trial_id)
        if rec is None:
            return
        if self.curve_metric is None:
            self.curve_metric = next(iter(batch[0][1]))
        objective = self.curve_metric
        curve = [(step, metrics[objective]) for step, metrics, _ in batch if objective in metrics]
        with self._lock:
            self._batches.append((trial_id, rec.attempt_number(attempt), batch))
            rec.steps = max(rec.steps, max(step for step, _, _ in batch) + 1)
            for _, metrics, _ in batch:
                rec.last.update(metrics)
            if curve:
                rec.curve_steps.extend(step for step, _ in curve)
                rec.curve_values.extend(value for _, value in curve)
        for listener in self._report_listeners:
            listener(trial_id, batch)

    def log(self, trial_id: int, attempt: str, stream: str, text: str) -> None:
        rec = self._trials.get(trial_id)
        if rec is not None:
            with self._lock:
                rec.attempt_number(attempt)
                (rec.stdout if stream == "stdout" else rec.stderr).append(text)

    def trial_finished(self, trial_id: int, outcome: dict) -> TrialRecord:
        rec = self._trials[trial_id]
        with self._lock:
            if outcome["attempt"] is not None:
                rec.attempt_number(outcome["attempt"])
            rec.last.update(outcome["last"])
            if outcome["steps"] is not None:
                rec.steps = outcome["steps"]
            if outcome["started"] is not None:
                rec.started = outcome["started"]  # when the worker began it, not when it was queued
            rec.duration = (
                outcome["duration"] if outcome["duration"] is not None else time.time() - rec.started
            )
            rec.error = outcome["error"]
            rec.stopped_at = outcome["stopped_at"]
            rec.result = outcome.get("result")
            rec.rank_results = outcome.get("results")
        state = outcome["state"]
        if self.metric is None:  # nothing to optimise: the last value of the curve, for the table
            rec.value = rec.last.get(self.curve_metric) if self.curve_metric else None
        elif state == "completed":
            rec.value, problem = self._objective(outcome["returned"], rec.last)
            if problem and self._best is None:  # the first trial to complete: the metric is wrong, stop here
                rec.state, rec.error = "failed", problem
                raise MetricError(problem)
            if problem:
                state, rec.error = "failed", problem
        elif state != "failed":  # pruned or stopped: its last value, as Optuna keeps it
            rec.value = rec.last.get(self.metric)
        rec.state = state
        if state == "completed" and (self._best is None or self._better(rec.value, self._best.value)):
            self._best = rec
        return rec

    # --- helpers -----------------------------------------------------------------------------------------
    def _better(self, a: float, b: float) -> bool:
        return a > b if self.mode == "max" else a < b

    def _objective(self, returned: Any, last: dict[str, float]) -> tuple[float | None, str | None]:
        if isinstance(returned, float):
            value = returned
        elif isinstance(returned, dict) and self.metric in returned:
            value = returned[self.metric]
        elif self.metric in last:
            value = last[self.metric]
        else:
            seen = sorted(set(last) | set(returned or {}))
            return None, (
                f"the training function neither returned nor reported metric {self.metric!r} "
                f"(it reported/returned: {', '.join(seen) or 'nothing'}); report it with "
                f"jupyter_dist.report({self.metric}=...) or return it, or pick another metric"
            )
        if math.isnan(value):
            return None, f"the objective {self.metric!r} is NaN"
        return value, None

    def summary(self) -> str:
        """The one-line status (an ablation study's summary is a table instead)."""
        return self.status_line()

    def final_outputs(self) -> list:
        """What a view shows below itself when the experiment ends (an ablation study: its table and chart)."""
        return []

    def highlight(self) -> str | None:
        """The headline result so far: the best trial (an ablation study: its baseline)."""
        if self._best is None:
            return None
        b = self._best
        return f"best {self.metric}={b.value:.6g} (trial {b.trial_id}, {_format_params(b.params)})"

    def status_line(self) -> str:
        c = self.counts()
        done = c["completed"] + c["pruned"] + c["failed"] + c["stopped"]
        parts = [f"{self.kind} {self.name!r} {self.state}: {done}/{self.total or '?'} trials done"]
        parts += [f"{c[s]} {s}" for s in ("running", "pruned", "failed", "stopped") if c[s]]
        highlight = self.highlight()
        if highlight:
            parts.append(highlight)
        used = self.compute()
        if "saved" in used and self.state != "running":
            parts.append(f"{used['saved']:.0%} of steps saved by pruning")
        parts.append(f"{self.elapsed:.1f}s")
        return " · ".join(parts)

    def __repr__(self) -> str:
        return f"<Experiment {self.status_line()}>"

    def _repr_html_(self) -> str:
        table = self.trials
        if len(table):
            table = (
                table.drop(columns=["error"])
                .sort_values("value", ascending=self.mode == "min", na_position="last")
                .head(10)
            )
        return (
            f"<div><b>{html.escape(self.status_line())}</b>"
            f"{table.to_html(index=False, float_format=lambda v: f'{v:.4g}') if len(table) else ''}</div>"
        )


def _format_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v!r}" for k, v in params.items())
