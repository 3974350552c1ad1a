"""A trial that runs as one Dask task: its outcome comes on the event stream, or from the task itself."""

from __future__ import annotations

import time
import traceback
from typing import Any

from ..protocol import ErrorKind, Outcome, TrialState
from ._loop import RunningTrial

# How long a finished trial's outcome event may lag its task before the result is gathered instead.
OUTCOME_GRACE = 1.0


class TaskTrial(RunningTrial):
    def __init__(self, trial_id: int, future) -> None:
        super().__init__(trial_id)
        self.future = future
        self.futures = [future]
        self.unreported_since: float | None = None  # when the task ended without its outcome event

    def on_event(self, kind: str, payload: Any) -> Outcome | None:
        if kind == "outcome":
            return payload  # the fast path: ~2 ms after the function returned
        if payload is not self.future:
            return None
        if self.future.status == "finished":
            self.unreported_since = self.unreported_since or time.monotonic()
        elif self.future.status == "error":
            return Outcome.lost(self.trial_id, TrialState.FAILED, task_error(self.future), ErrorKind.LOST)
        elif self.future.status == "cancelled":
            if self.told_to_stop:
                return Outcome.lost(self.trial_id, TrialState.STOPPED, None, None)
            # Not by us: Dask cancels every future when the client loses the scheduler (or someone cancelled
            # it on the dashboard). It did not end by itself: a resumed run runs it again.
            why = "its task was cancelled by Dask (the client lost the scheduler, or it was cancelled there)"
            return Outcome.lost(self.trial_id, TrialState.INTERRUPTED, why, ErrorKind.LOST)
        return None

    def poll(self, now: float) -> Outcome | None:
        if self.unreported_since is not None and now - self.unreported_since > OUTCOME_GRACE:
            return self.future.result()  # the event was lost or is slow: the task's result says the same
        return None

    def abandon(self, why: str) -> Outcome:
        self.cancel()
        return Outcome.lost(self.trial_id, TrialState.STOPPED, f"stopped: {why}", ErrorKind.ABANDONED)

    def cancel(self) -> None:
        self.future.cancel()


def task_error(future) -> str:
    """What went wrong with a task that failed on Dask itself (not inside the function)."""
    if future.status == "cancelled":
        return "the task was cancelled"
    exc = future.exception()
    text = "".join(traceback.format_exception(type(exc), exc, future.traceback()))
    return f"the trial's task failed on Dask:\n{text}"
