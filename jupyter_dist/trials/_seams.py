"""The seams the trial loop drives (trials/_loop.py) and what crosses them.

A *source* decides what to run (HPO asks Optuna, ablation walks its plan), a *sink* records what happened (the
experiment's record), a *watcher* (the run's callbacks) hears of every trial, and a *launcher* runs trials
somewhere (trials/_launcher.py: on Dask workers), keeps their tasks, and says when a trial has ended. They are
Protocols so that the loop knows none of them: its tests drive it with a fake launcher, and each kind brings its
own source. What crosses them is typed: a trial to run (``TrialSpec``), one in flight (``RunningTrial``), one of
its tasks ending (``TaskEnded``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..protocol import CheckpointEvent, LogLine, Outcome, ReportBatch, ReportRow, UtilizationSample
from ..store import TrialSink  # declared with the record that implements it

__all__ = [
    "RunningTrial",
    "TaskEnded",
    "TrialLauncher",
    "TrialSink",
    "TrialSource",
    "TrialSpec",
    "TrialWatcher",
]


@dataclass
class TrialSpec:
    """A trial the source wants run: its id, the function's arguments, and what it is beyond them."""

    trial_id: int
    params: dict[str, Any]
    labels: dict[str, Any] = field(default_factory=dict)  # e.g. an ablation trial's left-out component
    # A resumed run's re-run of a trial its last kernel left running: that trial's id, whose checkpoints it
    # goes on from (it gets a new id of its own).
    continues: int | None = None
    # A define-by-run HPO trial's Optuna distributions (as JSON), which differ trial by trial: kept with its
    # record.
    distributions: dict[str, Any] | None = None
    # It ends, completed, at its first checkpoint of this step or a later one (a PBT member's segment).
    until_step: int | None = None
    # Its seed (protocol/_seeds.py), which its worker seeds random, NumPy and torch with; None: nothing seeded.
    seed: int | None = None


@dataclass(frozen=True)
class TaskEnded:
    """One of a trial's tasks ended (it finished, failed or was cancelled): the launcher says what that means."""

    trial_id: int
    rank: int  # which of the trial's tasks (0 for a single-task trial)
    task: Any  # the launcher's handle of the task (a Dask future)


class RunningTrial:
    """One trial in flight, as the loop knows it. The launcher that started it keeps its tasks and decides, from
    what arrives, when it has ended (a launcher's trials add what they need to decide that)."""

    def __init__(self, trial_id: int) -> None:
        self.trial_id = trial_id
        self.told_to_stop = False  # pruned, or stopped with the experiment


class TrialSource(Protocol):
    prunes: bool  # whether report() can ever say stop; when False reports are not handed to it

    def next_trial(self) -> TrialSpec | None: ...

    def remaining(self) -> int | None:
        """How many more trials next_trial() will give; None when it does not know (until a timeout)."""

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        """A running trial's new reports; True when it should stop (it is pruned)."""

    def tell(self, outcome: Outcome) -> None:
        """How a trial ended: its final state and (``value``) its objective, as the record keeps them."""


class TrialWatcher(Protocol):
    """What hears of the trials as the loop runs them (the run's callbacks), on the loop's thread, in order; a
    method that raises aborts the run."""

    wants_reports: bool  # when False, trial_reported is never called (and reports need not reach the loop)

    def trial_started(self, trial_id: int) -> None: ...

    def trial_reported(self, trial_id: int, rows: list[ReportRow]) -> None: ...

    def trial_ended(self, trial_id: int) -> None:
        """It ended, recorded and told to the source."""


class TrialLauncher(Protocol):
    def events(
        self,
        on_reports: Callable[[ReportBatch], None],
        on_log: Callable[[LogLine], None],
        on_checkpoint: Callable[[CheckpointEvent], None],
        on_outcome: Callable[[Outcome], None],
        on_utilization: Callable[[UtilizationSample], None],
    ) -> AbstractContextManager: ...

    def place(self, trial_id: int, behind: int = 0) -> Any | None:
        """Where the trial would run; None while it cannot be placed yet (too few free workers). ``behind``: it
        is queued ahead, to wait on a worker that has fewer than ``behind`` trials of ours waiting per slot."""

    def start(
        self, starts: list[tuple[TrialSpec, Any]], notify: Callable[[TaskEnded], None]
    ) -> list[RunningTrial]:
        """Start these trials, each where ``place()`` said, together (one submission where the cluster allows);
        ``notify`` is how the ends of their tasks reach the loop (from any thread)."""

    def settle(self, trial: RunningTrial, event: Outcome | TaskEnded) -> Outcome | None:
        """An outcome (of the trial, or of one of its ranks) or a task's end arrived: the trial's outcome, once
        that settles it."""

    def poll(self, trial: RunningTrial, now: float) -> Outcome | None:
        """Periodic checks between events (a late outcome, a lost worker); its outcome if that settled it."""

    def abandon(self, trial: RunningTrial, why: str) -> Outcome:
        """Give up on it now (it did not stop in time, or the run was interrupted)."""

    def cancel(self, trial: RunningTrial) -> None:
        """Cancel its tasks, as the run is aborted."""

    def stop(self, trial_ids: list[int] | None) -> None: ...

    def finished(self, trial: RunningTrial, outcome: Outcome) -> int | None:
        """It ended; the trial queued behind it on its worker, which begins now, if any."""

    def queues_behind(self, parallel: int) -> bool:
        """Whether a trial queued ahead on a worker would wait there (``parallel`` takes every slot) rather than
        start at once beside the running ones."""

    def lost(self) -> str | None:
        """Why the cluster is gone for good, or None."""

    def tidy(self) -> None: ...

    def wind_down(self) -> None:
        """The run is over: let go of what its trials left behind."""
