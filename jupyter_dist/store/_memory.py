"""The in-memory experiment record, as the trial loop writes it (its reading half: _kept.py): what a run keeps in
the kernel while it runs and after, and what a stored run is read back as."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._tracebacks import in_user_terms
from ..protocol import (
    CheckpointEvent,
    ExperimentState,
    LogLine,
    Outcome,
    ReportBatch,
    TrialState,
    UtilizationSample,
)
from ._base import EXTENDED, ExperimentDefinition, TrialRecord, result_repr
from ._kept import KeptRecord
from ._restarts import restart_row, went_on_from

if TYPE_CHECKING:
    from ..protocol import Regrouped
    from ._journal import Journal


class InMemoryRecord(KeptRecord):
    """Everything in the kernel's memory; with a ``journal`` (the store's), every change is also handed to it
    where it happens, to be written to disk in batches. What it keeps, and how that is read: ``KeptRecord``."""

    def __init__(self, definition: ExperimentDefinition, journal: Journal | None = None) -> None:
        super().__init__(definition, journal)
        self._attempts: dict[int, dict[str, int]] = {}  # trial id -> attempt id -> attempt number
        # A resumed run's trial that an earlier run started: its attempts are numbered on from that run's.
        self._attempts_before: dict[int, int] = {}
        # A finished trial trained on (exp.extend): the seconds its earlier attempts took, added to its duration.
        self._seconds_before: dict[int, float] = {}
        # The previous attempt's learning curve, while the current one may still say it resumed from a step of it.
        self._earlier_curves: dict[int, tuple[list[int], list[float]]] = {}
        # Why a trial's next attempt runs, when not because its worker was lost (its function raised: retried).
        self._rerun_because: dict[int, str] = {}
        # Elastic trials that regrouped and whose new group has not restored its checkpoint yet (_restarts.py).
        self._restore_awaited: set[int] = set()

    # --- written by the trial loop --------------------------------------------------------------------------
    def trial_started(
        self,
        trial_id: int,
        params: dict[str, Any],
        labels: dict[str, Any],
        queued: bool = False,
        distributions: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        earlier = self._taken_back(trial_id)  # a resumed run running a trial of the run it continues again
        rec = TrialRecord(
            trial_id, dict(params), labels=dict(labels), queued=queued, distributions=distributions, seed=seed
        )
        self._trials[trial_id] = rec
        self._attempts[trial_id] = {}
        if earlier is not None:
            self._attempts_before[trial_id] = earlier.attempts
            self._earlier_curves[trial_id] = (earlier.curve_steps, earlier.curve_values)
            if earlier.state in (TrialState.COMPLETED, TrialState.PRUNED, TrialState.STOPPED):
                self._extended(earlier, rec)
        if self._journal:
            self._journal.trial_changed(rec)

    def _extended(self, earlier: TrialRecord, rec: TrialRecord) -> None:
        """A finished trial trains on as its next attempt (``exp.extend``): it keeps what it printed, its newest
        checkpoint (until the attempt saves a later one) and the time it took, to which the attempt's is added."""
        rec.stdout, rec.stderr = earlier.stdout, earlier.stderr
        rec.checkpoint, rec.checkpoint_step = earlier.checkpoint, earlier.checkpoint_step
        rec.steps, rec.last = earlier.steps, dict(earlier.last)
        self._seconds_before[rec.trial_id] = earlier.duration or 0.0
        note = (
            f"\n--- attempt {earlier.attempts + 1} (extended to {rec.labels.get(EXTENDED, '?')} steps) ---\n"
        )
        rec.stdout.append(note)
        if self._journal:
            self._journal.output(rec.trial_id, "stdout", note)

    def trial_began(self, trial_id: int) -> None:
        rec = self._trials[trial_id]
        rec.queued, rec.started = False, time.time()
        if self._journal:
            self._journal.trial_changed(rec)

    def _attempt_number(self, rec: TrialRecord, attempt: str) -> int:
        numbers = self._attempts[rec.trial_id]
        number = numbers.get(attempt)
        if number is None:
            again = bool(numbers)
            number = numbers[attempt] = self._attempts_before.get(rec.trial_id, 0) + len(numbers)
            rec.attempts = number + 1
            if again:  # a worker died, or it raised and is retried: its curve starts over, unless it resumes
                self._earlier_curves[rec.trial_id] = (rec.curve_steps, rec.curve_values)
                rec.curve_steps, rec.curve_values = [], []
                rec.resumed_from = None
                why = self._rerun_because.pop(rec.trial_id, "the previous worker was lost")
                for stream in (rec.stdout, rec.stderr):
                    stream.append(f"\n--- attempt {number + 1} ({why}) ---\n")
        return number

    def reports_arrived(self, batch: ReportBatch) -> None:
        rec = self._trials.get(batch.trial_id)
        if rec is None:
            self._late_reports(batch)
            return
        rows = batch.rows
        if self.curve_metric is None:
            self.curve_metric = next(iter(rows[0][1]))
        metric = self.curve_metric
        with self._lock:
            attempt = self._attempt_number(rec, batch.attempt)
            self._report_count += len(rows)
            if self._journal is None:
                self._batches.append((batch.trial_id, attempt, rows))
            # One pass, no tuple per report: on Dask's IO thread, which also runs the scheduler in the kernel
            # (0.15 us a report, against 0.26 us for the four passes this replaced).
            steps, values, last, top = rec.curve_steps, rec.curve_values, rec.last, rec.steps - 1
            for step, metrics, _ in rows:
                if step > top:
                    top = step
                if metric in metrics:
                    steps.append(step)
                    values.append(metrics[metric])
                last.update(metrics)
            rec.steps = top + 1
        if self._journal:
            self._journal.reports(batch.trial_id, attempt, rows)
        for listener in self._report_listeners:
            listener(batch.trial_id, rows)

    def _late_reports(self, batch: ReportBatch) -> None:
        """Reports of a trial that has ended (an attempt whose worker was given up on, still sending): kept with
        its last attempt, not drawn."""
        with self._lock:
            if batch.trial_id not in self._finished:
                return
            row = self._finished.row(batch.trial_id)
            attempt = max(0, self._finished.record(row).attempts - 1)
            self._report_count += len(batch.rows)
            if self._journal is None:
                self._batches.append((batch.trial_id, attempt, batch.rows))
        if self._journal:
            self._journal.reports(batch.trial_id, attempt, batch.rows)

    def log_arrived(self, line: LogLine) -> None:
        rec = self._trials.get(line.trial_id)
        with self._lock:
            if rec is not None:
                self._attempt_number(rec, line.attempt)
                (rec.stdout if line.stream == "stdout" else rec.stderr).append(line.text)
            elif line.trial_id in self._finished:  # printed as it ended
                self._finished.add_output(self._finished.row(line.trial_id), line.stream, line.text)
            else:
                return
        if self._journal:
            self._journal.output(line.trial_id, line.stream, line.text)

    def checkpoint_arrived(self, event: CheckpointEvent) -> None:
        rec = self._trials.get(event.trial_id)
        if rec is None:
            return
        with self._lock:
            if event.resumed and event.trial_id in self._restore_awaited:
                self._restore_awaited.discard(event.trial_id)
                row = rec.restarts[-1]
                if went_on_from(row, event.step) and rec.trial_id in self._rerun_because:
                    self._rerun_because[rec.trial_id] = row["message"]  # the attempt's note says it as it is
            self._attempt_number(rec, event.attempt)
            if not event.resumed:
                rec.checkpoint, rec.checkpoint_step = event.path, event.step
            else:
                rec.resumed_from = event.step
                # The curve goes on from the checkpoint: the earlier attempt's points up to it, then this one's.
                steps, values = self._earlier_curves.pop(rec.trial_id, ([], []))
                kept = [i for i, step in enumerate(steps) if step <= event.step]
                rec.curve_steps = [steps[i] for i in kept] + rec.curve_steps
                rec.curve_values = [values[i] for i in kept] + rec.curve_values
                note = f"--- resumed from its checkpoint of step {event.step} ---\n"
                rec.stdout.append(note)
        if self._journal:
            self._journal.trial_changed(rec)
            if event.resumed:
                self._journal.output(rec.trial_id, "stdout", note)

    def utilization_arrived(self, sample: UtilizationSample) -> None:
        if sample.trial_id not in self._trials and sample.trial_id not in self._finished:
            return
        row = (
            sample.trial_id,
            sample.time,
            sample.cpu_percent,
            sample.rss_mb,
            sample.gpu_util,
            sample.gpu_mem_mb,
        )
        self._usage.extend([row])
        if self._journal:
            self._journal.utilization(row)

    def trial_retried(self, outcome: Outcome, why: str) -> None:
        """An attempt of a trial raised and the trial runs again (``max_failures=``): its traceback stays in the
        trial's stderr, and the next attempt's note there says why it runs (``why``: which retry it is)."""
        rec = self._trials.get(outcome.trial_id)
        if rec is None:
            return
        with self._lock:
            number = self._attempt_number(rec, outcome.attempt) if outcome.attempt else rec.attempts - 1
            text = f"--- attempt {number + 1} failed ---\n{in_user_terms(outcome.error)}"
            rec.stderr.append(text)
            self._rerun_because[rec.trial_id] = (
                f"attempt {number + 1} raised, its traceback is in stderr; {why}"
            )
        if self._journal:
            self._journal.output(rec.trial_id, "stderr", text)

    def trial_regrouped(self, event: Regrouped) -> None:
        """An elastic data-parallel trial started again at another size (trials/_elastic.py): kept with the trial,
        said in its output, and the reason its next attempt runs."""
        rec = self._trials.get(event.trial_id)
        if rec is None:
            return
        with self._lock:
            row = restart_row(event, rec.steps - 1 if rec.steps else None)
            rec.restarts.append(row)
            self._rerun_because[rec.trial_id] = row["message"]
            self._restore_awaited.add(rec.trial_id)
        if self._journal:
            self._journal.trial_changed(rec)

    def trial_pruned(self, trial_id: int) -> None:
        rec = self._trials.get(trial_id)
        if rec is not None:  # not one that ended meanwhile
            rec.prune_decided_at = time.time()

    def metrics_so_far(self, trial_id: int) -> dict[str, float]:
        return dict(self.trial(trial_id).last)

    def trial_finished(self, outcome: Outcome) -> TrialRecord:
        rec = self._trials[outcome.trial_id]
        with self._lock:
            if outcome.attempt is not None:
                self._attempt_number(rec, outcome.attempt)
            rec.last.update(outcome.last)
            if outcome.steps is not None:
                rec.steps = outcome.steps
            # A trial re-run after its worker was lost began with its first attempt, and took every attempt's
            # time: the last attempt's start and duration (the outcome's) would restart its clock.
            rerun = rec.attempts - self._attempts_before.get(rec.trial_id, 0) > 1
            if outcome.started is not None and not rerun:
                rec.started = outcome.started  # when the worker began it, not when it was queued
            if outcome.duration is None:
                rec.duration = time.time() - rec.started
            elif rerun and outcome.started is not None:
                rec.duration = outcome.started + outcome.duration - rec.started
            else:
                rec.duration = outcome.duration
            rec.duration += self._seconds_before.pop(rec.trial_id, 0.0)
            rec.error, rec.error_kind = in_user_terms(outcome.error), outcome.error_kind
            rec.stopped_at = outcome.stopped_at
            rec.result, rec.rank_results = outcome.result, outcome.rank_results
            rec.constraints = outcome.constraints
            rec.result_repr = result_repr(outcome.result)
            # Nothing to optimise (a data-parallel run): the curve's last value, for the table.
            curve = self.curve_metric
            rec.value = (
                outcome.value
                if self.definition.objective.metric
                else rec.last.get(curve)
                if curve is not None
                else None
            )
            rec.state, rec.queued = outcome.state, False
        self._consider_best(rec)
        if self._journal:
            self._journal.trial_changed(rec)
        self._ended(rec)
        return rec

    def _ended(self, rec: TrialRecord) -> None:
        """``rec`` ended: its row in the columns replaces it, and what was kept for its attempts goes."""
        trial_id = rec.trial_id
        with self._lock:
            self._finished.add(rec)
            del self._trials[trial_id]
        for kept in (self._attempts, self._attempts_before, self._earlier_curves, self._rerun_because):
            kept.pop(trial_id, None)
        self._restore_awaited.discard(trial_id)

    def _taken_back(self, trial_id: int) -> TrialRecord | None:
        """The trial's record, taken out of the ended ones if it is there (it runs again), else the running one."""
        with self._lock:
            if trial_id in self._finished:
                rec = self._finished.record(self._finished.row(trial_id))
                self._finished.remove(trial_id)
                return rec
        return self._trials.get(trial_id)

    def finish(self, state: ExperimentState, message: str | None = None) -> None:
        super().finish(state, message)
        interrupted = [rec for rec in self._trials.values() if rec.state is TrialState.INTERRUPTED]
        for rec in interrupted:
            if self._journal:
                # Trials the run's end interrupted: the store must say so too.
                self._journal.trial_changed(rec)
            self._ended(rec)
        if self._journal:
            assert self.ended is not None  # finish() set it
            self._journal.close(state, message, self.ended)

    def continued(self, definition: ExperimentDefinition, journal: Journal | None) -> InMemoryRecord:
        """This stored record, running again (a resumed run) under ``definition``, journalled to ``journal``."""
        self.load_details()  # the stored curves and output, to go on from
        if journal:
            self._batches = []  # the store has them, under this same id: report_rows() reads them there
        self.definition, self._journal = definition, journal
        self.state, self.message, self.ended = ExperimentState.RUNNING, None, None
        if journal:
            finished = self._finished
            for row in finished.rows():
                if finished.state(row) is TrialState.INTERRUPTED:  # the store still says "running"
                    journal.trial_changed(finished.record(row))
        return self
