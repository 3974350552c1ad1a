"""The seam between a run and where it is recorded: the ``ExperimentRecord`` interface that the trial loop writes to
(``TrialSink``) and ``Experiment`` reads from.

The in-memory record (_memory.py, _kept.py) implements it, handing every change to the store's journal
(_journal.py); a run read back from the store (_catalog.read_record) is the same record, so ``Experiment`` and the
views do not notice where a run came from (as Optuna's studies do not notice which ``BaseStorage`` holds them).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..protocol import (
    CheckpointEvent,
    ErrorKind,
    ExperimentState,
    LogLine,
    Outcome,
    ReportBatch,
    TrialState,
    UtilizationSample,
)
from ._base import QUEUED, ExperimentDefinition, TrialRecord, best_first, experiment_seconds, param_names
from ._utilization import UtilizationColumns

__all__ = ["ExperimentRecord", "TrialSink"]


class TrialSink(Protocol):
    """What the trial loop writes to (jupyter_dist.trials names it among its seams): the experiment's record. A
    Protocol, so the loop's tests can hand it a fake; declared once, here, with the record that implements it.
    ``reports_arrived``, ``log_arrived``, ``checkpoint_arrived`` and ``utilization_arrived`` come on the launcher's
    IO thread (quick, never waiting on a disk), the rest on the loop's thread."""

    @abstractmethod
    def trial_started(
        self,
        trial_id: int,
        params: dict[str, Any],
        labels: dict[str, Any],
        queued: bool = False,
        distributions: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        """A trial was sent to run; ``queued``: it waits on a worker behind another one until trial_began().
        ``seed``: what its worker seeded its random numbers with."""

    @abstractmethod
    def trial_began(self, trial_id: int) -> None:
        """A queued trial is running now."""

    @abstractmethod
    def reports_arrived(self, batch: ReportBatch) -> None: ...

    @abstractmethod
    def log_arrived(self, line: LogLine) -> None: ...

    @abstractmethod
    def checkpoint_arrived(self, event: CheckpointEvent) -> None:
        """A trial saved a checkpoint, or an attempt resumed from one (Dask IO thread)."""

    @abstractmethod
    def utilization_arrived(self, sample: UtilizationSample) -> None:
        """What a running trial used over about the last second (trials/_utilization.py)."""

    @abstractmethod
    def trial_pruned(self, trial_id: int) -> None: ...

    @abstractmethod
    def metrics_so_far(self, trial_id: int) -> dict[str, float]:
        """The last value of each metric the trial has reported, in any of its attempts: what an attempt that went
        on from a checkpoint and reported nothing more ends with (a trial extended past its own budget)."""

    @abstractmethod
    def trial_finished(self, outcome: Outcome) -> TrialRecord:
        """Record a finished trial (its value already judged by the objective) and return its record."""


class ExperimentRecord(TrialSink, ABC):
    """Everything recorded about one experiment while it runs and after.

    Written by the trial loop, through ``TrialSink``'s methods; read by ``Experiment`` and the views.
    """

    def __init__(self, definition: ExperimentDefinition) -> None:
        self.definition = definition
        self.state = ExperimentState.RUNNING
        # What its end says: a failed or interrupted run's error, or how a planned end came (a target reached).
        self.message: str | None = None
        # The experiment's first start (a resumed run keeps it); how long it has run is duration().
        self.started = definition.created
        self.ended: float | None = None
        # The metric drawn as learning curves: the objective's, or (a data-parallel run needs none) the first
        # one reported.
        self.curve_metric: str | None = definition.objective.metric
        self._report_listeners: list[Callable[[int, list], None]] = []

    @property
    def error(self) -> str | None:
        """Why the run failed (or was interrupted); None for a run that ended as planned, whatever it says."""
        failed = self.state in (ExperimentState.FAILED, ExperimentState.INTERRUPTED)
        return self.message if failed else None

    def finish(self, state: ExperimentState, message: str | None = None) -> None:
        """The experiment ended, ``message`` saying why (``message``); a trial still running (the run failed
        around it) is interrupted, as the store reads it back."""
        self.state, self.message, self.ended = state, message, time.time()
        for rec in self.running_records():
            rec.interrupt(self.ended)

    def duration(self, now: float | None = None) -> float:
        """How long the experiment has run (``experiment_seconds``): to its end, or to ``now`` while it runs."""
        end = self.ended if self.ended is not None else time.time() if now is None else now
        return experiment_seconds(self.definition.created, self.definition.details, end)

    # --- read by Experiment ---------------------------------------------------------------------------------
    def load_details(self) -> None:  # noqa: B027 - a hook: only a record read back from disk has work to do
        """Make the learning curves and output complete: a record read back from the store reads its reports and
        output only when first asked (a million reports take seconds); a live one has them already."""

    @abstractmethod
    def trial(self, trial_id: int) -> TrialRecord:
        """One trial's record (KeyError if there is none)."""

    def trial_without_details(self, trial_id: int) -> TrialRecord:
        """One trial's record, its learning curve and output left out where they are not read yet (a record
        read back from the store: ``load_details``), for what reads neither: its checkpoint, labels, state.
        KeyError if there is no such trial."""
        return self.trial(trial_id)

    def trial_logs(self, trial_id: int) -> str:
        """What one trial printed and its traceback, ``TrialRecord.logs`` (KeyError if there is no such trial)."""
        return self.trial(trial_id).logs

    @abstractmethod
    def trial_records(self) -> list[TrialRecord]:
        """Every trial's record, by trial id."""

    @abstractmethod
    def best(self) -> TrialRecord | None:
        """The best completed trial so far."""

    @abstractmethod
    def report_rows(self) -> Iterator[tuple[int, int, int, str, float, float]]:
        """Every reported metric: (trial_id, attempt number, step, metric, value, time sent)."""

    @abstractmethod
    def report_count(self) -> int:
        """How many report() calls have arrived."""

    @abstractmethod
    def utilization(self) -> UtilizationColumns:
        """Every utilisation sample so far, in arrival order."""

    @property
    def stored(self) -> bool:
        """Whether the run is being written to a store."""
        return False

    @property
    def store_problem(self) -> str | None:
        """Why this run is no longer being written to the store, if it is not (it goes on in memory)."""
        return None

    def counts(self) -> dict[str, int]:
        """Trials by state, and how many of the running ones are still queued on a worker (``queued``, not
        counted as ``running``)."""
        counts = dict.fromkeys([*(s.value for s in TrialState), QUEUED], 0)
        for rec in self.trial_records():
            counts[QUEUED if rec.queued else rec.state.value] += 1
        return counts

    def done(self) -> int:
        """Trials done, as counted against the total (not running, not interrupted)."""
        counts = self.counts()
        return sum(counts[s.value] for s in TrialState if s.done)

    # What a view that polls reads: none of them walks every trial, so a view of a 100,000-trial run costs what
    # one of a hundred does. The in-memory record answers them from its running trials and its columns.
    def trial_count(self) -> int:
        """How many trials there are, in every state."""
        return len(self.trial_records())

    def running_records(self) -> list[TrialRecord]:
        """The running trials (queued ones included), by trial id."""
        return [rec for rec in self.trial_records() if rec.state is TrialState.RUNNING]

    def failed_records(self) -> list[TrialRecord]:
        """The failed trials, by trial id."""
        return [rec for rec in self.trial_records() if rec.state is TrialState.FAILED]

    def ranked(
        self, offset: int = 0, limit: int | None = None, state: TrialState | None = None
    ) -> list[TrialRecord]:
        """A page of the trials (of one ``state``, or all) in the order views list them (``best_first``)."""
        records = self.trial_records()
        if state is not None:
            records = [rec for rec in records if rec.state is state]
        ordered = best_first(records, self.definition.objective)
        return ordered[offset:] if limit is None else ordered[offset : offset + limit]

    def param_names(self) -> list[str]:
        """The parameters of the trials, in the order the views list them (``param_names``)."""
        return param_names(self.trial_records())

    # --- aggregates the status line and compute() read (issue 44): naive here, kept incrementally by the record ---
    def ended_totals(self) -> dict[str, float]:
        """Sums over the trials that are not running (every state but running; a queued trial is running):
        ``trials`` (how many: the ``TrialState.finished`` ones), ``steps`` (their ``steps``), ``seconds`` (their
        ``duration``, 0 where None) and ``capped_steps`` (their ``min(steps, definition.max_steps)``; their steps
        when there is no max_steps). The running trials' are the caller's to add, from ``running_records()``:
        their seconds grow with the clock."""
        cap = self.definition.max_steps
        totals = {"trials": 0, "steps": 0, "seconds": 0.0, "capped_steps": 0}
        for rec in self.trial_records():
            if rec.state is TrialState.RUNNING:
                continue
            totals["trials"] += 1
            totals["steps"] += rec.steps
            totals["seconds"] += rec.duration or 0.0
            totals["capped_steps"] += min(rec.steps, cap) if cap else rec.steps
        return totals

    def out_of_memory(self, limit: int | None = None) -> tuple[int, list[TrialRecord]]:
        """How many trials ran out of memory (``error_kind is ErrorKind.MEMORY``), and the first ``limit`` of them
        (all with None) by trial id."""
        hit = [rec for rec in self.trial_records() if rec.error_kind is ErrorKind.MEMORY]
        return len(hit), hit if limit is None else hit[:limit]

    def varied_params(self) -> list[str]:
        """The parameters whose value differs between the trials (``repr(rec.params.get(name))``: a trial
        without the parameter counts as None), in ``param_names()`` order; none with fewer than two trials."""
        records = self.trial_records()
        return [
            name for name in param_names(records) if len({repr(rec.params.get(name)) for rec in records}) > 1
        ]

    @abstractmethod
    def report_columns(self) -> dict[str, Any]:
        """Every reported metric as columns (``_report_columns.COLUMNS``): trial_id, attempt, step (int64), metric
        (object), value, time (float64, seconds): what ``exp.history`` is made of."""

    def add_report_listener(self, listener: Callable[[int, list], None]) -> None:
        """Call ``listener(trial_id, rows)`` as reports arrive, ``rows`` a list of ``[step, metrics, sent_at]``;
        on the Dask IO thread, so it must be quick and must not draw."""
        self._report_listeners.append(listener)
