"""A trial that runs as one Dask task: its outcome comes on the event stream, or from the task itself; and which
of its failures run it again (``max_failures=``)."""

from __future__ import annotations

import time
import traceback
from concurrent.futures import CancelledError
from typing import Any

from ..protocol import ErrorKind, Outcome, TrialState
from ._seams import RunningTrial

# How long a finished trial's outcome event may lag its task before the result is gathered instead.
OUTCOME_GRACE = 1.0


class TaskTrial(RunningTrial):
    """What the launcher decides a single-task trial's end from. Its task is the launcher's."""

    def __init__(self, trial_id: int) -> None:
        super().__init__(trial_id)
        self.unreported_since: float | None = None  # when its task ended without its outcome event
        self._finished_task: Any = None  # its ended task (a Dask future), while its outcome is late
        self._seen_ended = None  # the task whose end task_ended() was told

    def poll(self, task, now: float) -> Outcome | None:
        """Look at its task (the launcher does now and then): an outcome when the task failed or was cancelled,
        or when it finished OUTCOME_GRACE ago and its outcome event has not come."""
        if task is not self._seen_ended and task.done():
            self._seen_ended = task
            outcome = self.task_ended(task)
            if outcome is not None:
                return outcome
        return self.late_outcome(now)

    def task_ended(self, task) -> Outcome | None:
        """Its task ended: an outcome when the task itself failed or was cancelled (when it finished, the
        outcome event says how, ~2 ms after the function returned)."""
        if task.status == "finished":
            self.unreported_since = self.unreported_since or time.monotonic()
            self._finished_task = task
        elif task.status == "error":
            return Outcome.lost(self.trial_id, TrialState.FAILED, task_error(task), ErrorKind.LOST)
        elif task.status == "cancelled":
            if self.told_to_stop:
                return Outcome.lost(self.trial_id, TrialState.STOPPED, None, None)
            # Not by us: Dask cancels every future when the client loses the scheduler (or someone cancelled
            # it on the dashboard). It did not end by itself: a resumed run runs it again.
            why = "its task was cancelled by Dask (the client lost the scheduler, or it was cancelled there)"
            return Outcome.lost(self.trial_id, TrialState.INTERRUPTED, why, ErrorKind.LOST)
        return None

    def again(self) -> None:
        """It runs again as a new task: what its last task's end said no longer counts."""
        self.unreported_since, self._finished_task = None, None

    def late_outcome(self, now: float) -> Outcome | None:
        """The task's own result, when its outcome event is OUTCOME_GRACE late (lost or slow: it says the same)."""
        if self.unreported_since is not None and now - self.unreported_since > OUTCOME_GRACE:
            try:
                return self._finished_task.result()
            except CancelledError:
                # The scheduler went away with the result (its outcome event too): the trial ended, and how is
                # not known here, so a resumed run runs it again.
                why = "its result was lost with the Dask scheduler before it reached the kernel"
                return Outcome.lost(self.trial_id, TrialState.INTERRUPTED, why, ErrorKind.LOST)
        return None


class Retries:
    """Which failed trials run again: one whose function raised (``ErrorKind.TRIAL``; not a setup error, a bad
    return value, a missing metric or running out of memory, which would fail the same way again at the same
    parameters), up to ``max_failures`` more times, never one that was told to stop (pruned, or stopped with the
    experiment). A trial whose worker was lost is no failure of its own: Dask runs it again, up to its own cap
    (``distributed.scheduler.allowed-failures``; task_error says so when it is reached), and ``max_failures`` is
    not spent on it."""

    def __init__(self, max_failures: int) -> None:
        self.max_failures = max_failures
        self.failures: dict[int, int] = {}  # trial id -> attempts of it that failed and ran again
        self._retried: set[tuple[int, str | None]] = set()  # (trial id, attempt) already run again

    def already(self, outcome: Outcome) -> bool:
        """The outcome of an attempt already run again (its event and its task's result both say it)."""
        return (outcome.trial_id, outcome.attempt) in self._retried

    def take(self, trial: RunningTrial, outcome: Outcome) -> bool:
        """Whether ``outcome`` runs its trial again; if so, counted."""
        if (
            outcome.state is not TrialState.FAILED
            or outcome.error_kind is not ErrorKind.TRIAL
            or trial.told_to_stop
            or self.failures.get(trial.trial_id, 0) >= self.max_failures
        ):
            return False
        self.failures[trial.trial_id] = self.failures.get(trial.trial_id, 0) + 1
        self._retried.add((outcome.trial_id, outcome.attempt))
        return True

    def why(self, trial_id: int) -> str:
        """What the next attempt's note in the trial's output says."""
        return f"retry {self.failures[trial_id]} of max_failures={self.max_failures}"

    def forget(self, trial_id: int) -> None:
        self.failures.pop(trial_id, None)
        self._retried = {k for k in self._retried if k[0] != trial_id}


def task_error(future) -> str:
    """What went wrong with a task that failed on Dask itself (not inside the function)."""
    if future.status == "cancelled":
        return "the task was cancelled"
    exc = future.exception()
    text = "".join(traceback.format_exception(type(exc), exc, future.traceback()))
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        # Dask ran it again after each lost worker and gave up past its cap: the scheduler's, as the exception
        # carries it (a remote scheduler's config may differ from this kernel's dask.config).
        cap = exc.allowed_failures
        return (
            f"the trial's worker was lost {cap + 1} times while running it (killed, out of memory, or preempted); "
            f"it was not retried further: the cap is distributed.scheduler.allowed-failures={cap}\n{text}"
        )
    return f"the trial's task failed on Dask:\n{text}"
