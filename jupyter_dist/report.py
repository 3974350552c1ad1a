"""What a training function sees: ``report()``, ``TrialPruned`` and the optional injected ``Reporter``.

Inside a trial (on a Dask worker) ``report()`` sends each metric to the kernel as a Dask event and checks the
trial's stop flag. Outside an experiment it does nothing, so the same function runs unchanged when called
directly.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["report", "TrialPruned", "Reporter", "current_trial"]


class TrialPruned(BaseException):
    """Raised by ``report()`` once the trial has been pruned or its experiment stopped.

    It derives from ``BaseException``, like ``KeyboardInterrupt``, on purpose: training loops often wrap a step
    in ``except Exception`` to log and carry on, and that must not swallow the stop. Let it propagate (or
    re-raise it); the runner records the trial as pruned/stopped with its last reported values.
    """


# Stop flags of this worker process, set from the kernel with ``Client.run`` (a few ms) and read by report().
_stopped_trials: set[tuple[str, int]] = set()
_stopped_experiments: set[str] = set()


def mark_stopped(exp_id: str, trial_ids: list[int] | None = None) -> None:
    """Flag trials (or, with no ids, the whole experiment) as stopped in this process."""
    if trial_ids is None:
        _stopped_experiments.add(exp_id)
    else:
        _stopped_trials.update((exp_id, t) for t in trial_ids)


def forget_experiment(exp_id: str) -> None:
    """Drop an ended experiment's stop flags from this process."""
    _stopped_experiments.discard(exp_id)
    _stopped_trials.difference_update({key for key in _stopped_trials if key[0] == exp_id})


def _as_number(name: str, value: Any) -> float:
    # numpy and torch scalars are not msgpack types; float() accepts them and rejects anything else.
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"report(): metric {name!r} must be a number, got {type(value).__name__} {value!r}"
        ) from None


class TrialContext:
    """One attempt of one trial, as the worker runs it: streams reports and captured output to the kernel."""

    def __init__(self, exp_id: str, trial_id: int, attempt: str, topic: str, emit) -> None:
        self.exp_id = exp_id
        self.trial_id = trial_id
        self.attempt = attempt
        self.topic = topic
        self._emit = emit  # worker.log_event, bound once: get_worker() per report would cost more
        self.steps = 0
        self.last: dict[str, float] = {}

    @property
    def should_stop(self) -> bool:
        return self.exp_id in _stopped_experiments or (self.exp_id, self.trial_id) in _stopped_trials

    def report(self, step: int | None, metrics: dict[str, Any]) -> None:
        if not metrics:
            raise TypeError("report() needs at least one metric, e.g. report(step=3, loss=0.2)")
        values = {name: _as_number(name, value) for name, value in metrics.items()}
        step = self.steps if step is None else int(step)
        self.steps += 1
        self.last.update(values)
        self.send({"k": "r", "s": step, "m": values})
        if self.should_stop:
            raise TrialPruned(f"trial {self.trial_id} was stopped")

    def send(self, msg: dict) -> None:
        msg.update(t=self.trial_id, a=self.attempt, w=time.time())
        self._emit(self.topic, msg)


_thread = threading.local()
_active: dict[int, TrialContext] = {}


def activate(ctx: TrialContext | None) -> None:
    """Make ``ctx`` the trial of the calling thread (None: no trial)."""
    ident = threading.get_ident()
    _thread.ctx = ctx
    if ctx is None:
        _active.pop(ident, None)
    else:
        _active[ident] = ctx


def current_trial() -> TrialContext | None:
    """The trial running on this thread; from a helper thread, the process's only running trial."""
    ctx = getattr(_thread, "ctx", None)
    if ctx is None and len(_active) == 1:
        ctx = next(iter(_active.values()), None)
    return ctx


def report(step: int | None = None, **metrics: Any) -> None:
    """Report metrics of the running trial, e.g. ``report(step=epoch, loss=0.3, val_acc=0.9)``.

    Values must be numbers (Python, numpy or 0-d torch). Without ``step`` the calls are numbered 0, 1, 2, ...
    Outside an experiment this does nothing. Raises ``TrialPruned`` once the trial should stop.
    """
    ctx = current_trial()
    if ctx is not None:
        ctx.report(step, metrics)


class Reporter:
    """Injected into a training function that declares a ``reporter`` parameter (Maggy's style).

    Created directly (``Reporter()``) outside an experiment it reports nowhere and never asks to stop.
    """

    def __init__(self, ctx: TrialContext | None = None) -> None:
        self._ctx = ctx

    def report(self, step: int | None = None, **metrics: Any) -> None:
        if self._ctx is not None:
            self._ctx.report(step, metrics)

    @property
    def should_stop(self) -> bool:
        return self._ctx is not None and self._ctx.should_stop
