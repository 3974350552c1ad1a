"""The in-memory experiment record: what a run keeps in the kernel while it runs (and, for now, after)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from ..protocol import LogLine, Outcome, ReportBatch, TrialState
from ._base import ExperimentDefinition, ExperimentRecord, TrialRecord


class InMemoryRecord(ExperimentRecord):
    def __init__(self, definition: ExperimentDefinition) -> None:
        super().__init__(definition)
        self._trials: dict[int, TrialRecord] = {}
        self._attempts: dict[int, dict[str, int]] = {}  # trial id -> attempt id -> attempt number
        self._best: TrialRecord | None = None
        self._lock = threading.Lock()
        # Report batches as they arrived: (trial_id, attempt number, [[step, metrics, sent_at], ...]). Kept whole
        # so recording costs one append per batch; report_rows() flattens them when asked.
        self._batches: list[tuple[int, int, list]] = []

    # --- written by the trial loop --------------------------------------------------------------------------
    def trial_started(self, trial_id: int, params: dict[str, Any], labels: dict[str, Any]) -> None:
        self._trials[trial_id] = TrialRecord(trial_id, dict(params), labels=dict(labels))
        self._attempts[trial_id] = {}

    def _attempt_number(self, rec: TrialRecord, attempt: str) -> int:
        numbers = self._attempts[rec.trial_id]
        number = numbers.get(attempt)
        if number is None:
            number = numbers[attempt] = len(numbers)
            rec.attempts = number + 1
            if number:  # a worker died and Dask re-ran the trial: its curve starts over
                rec.curve_steps, rec.curve_values = [], []
                for stream in (rec.stdout, rec.stderr):
                    stream.append(f"\n--- attempt {number + 1} (the previous worker was lost) ---\n")
        return number

    def reports_arrived(self, batch: ReportBatch) -> None:
        rec = self._trials.get(batch.trial_id)
        if rec is None:
            return
        rows = batch.rows
        if self.curve_metric is None:
            self.curve_metric = next(iter(rows[0][1]))
        metric = self.curve_metric
        curve = [(step, metrics[metric]) for step, metrics, _ in rows if metric in metrics]
        with self._lock:
            self._batches.append((batch.trial_id, self._attempt_number(rec, batch.attempt), rows))
            rec.steps = max(rec.steps, max(step for step, _, _ in rows) + 1)
            for _, metrics, _ in rows:
                rec.last.update(metrics)
            if curve:
                rec.curve_steps.extend(step for step, _ in curve)
                rec.curve_values.extend(value for _, value in curve)
        for listener in self._report_listeners:
            listener(batch.trial_id, rows)

    def log_arrived(self, line: LogLine) -> None:
        rec = self._trials.get(line.trial_id)
        if rec is not None:
            with self._lock:
                self._attempt_number(rec, line.attempt)
                (rec.stdout if line.stream == "stdout" else rec.stderr).append(line.text)

    def trial_pruned(self, trial_id: int) -> None:
        self._trials[trial_id].prune_decided_at = time.time()

    def trial_finished(self, outcome: Outcome) -> TrialRecord:
        rec = self._trials[outcome.trial_id]
        with self._lock:
            if outcome.attempt is not None:
                self._attempt_number(rec, outcome.attempt)
            rec.last.update(outcome.last)
            if outcome.steps is not None:
                rec.steps = outcome.steps
            if outcome.started is not None:
                rec.started = outcome.started  # when the worker began it, not when it was queued
            rec.duration = outcome.duration if outcome.duration is not None else time.time() - rec.started
            rec.error, rec.error_kind = outcome.error, outcome.error_kind
            rec.stopped_at = outcome.stopped_at
            rec.result, rec.rank_results = outcome.result, outcome.rank_results
            # Nothing to optimise (a data-parallel run): the curve's last value, for the table.
            rec.value = outcome.value if self.definition.objective.metric else rec.last.get(self.curve_metric)
            rec.state = outcome.state
        if rec.state is TrialState.COMPLETED and rec.value is not None:
            if self._best is None or self.definition.objective.better(rec.value, self._best.value):
                self._best = rec
        return rec

    # --- read by Experiment ---------------------------------------------------------------------------------
    def trial(self, trial_id: int) -> TrialRecord:
        return self._trials[trial_id]

    def trial_records(self) -> list[TrialRecord]:
        trials = dict(self._trials)  # the loop may add one meanwhile
        return [trials[k] for k in sorted(trials)]

    def best(self) -> TrialRecord | None:
        return self._best

    def report_rows(self) -> Iterator[tuple[int, int, int, str, float, float]]:
        with self._lock:
            batches = list(self._batches)
        for trial_id, attempt, rows in batches:
            for step, metrics, sent_at in rows:
                for name, value in metrics.items():
                    yield trial_id, attempt, step, name, value, sent_at

    def report_count(self) -> int:
        return sum(len(rows) for _, _, rows in self._batches)
