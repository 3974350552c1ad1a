"""Callbacks: the user's code called as a run goes, in the kernel (Ray Tune's ``tune.Callback``), e.g. to log
every trial to a tracking server or to stop the experiment on a condition of one's own.

``Callback`` is the public base class, its hooks no-ops; ``CallbackHooks`` is what the trial loop calls (its
``TrialWatcher``), on the loop's thread, each hook of each callback in the order the callbacks were given. A hook
that raises fails the run with an error naming the callback and the hook (``HookFailed``); what was recorded so
far is kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import ArgumentError, HookFailed

if TYPE_CHECKING:
    from .experiment import Experiment
    from .store import TrialRecord

__all__ = ["Callback", "CallbackHooks", "OptunaCallback", "check_callbacks"]


class Callback:
    """Subclass it and override the hooks you need; pass instances as ``hpo(..., callbacks=[...])`` (also
    ``ablation()`` and ``data_parallel()``; ``%%distribute ... --callbacks NAME``, NAME a list in the notebook).

    Every hook runs in the kernel, on the thread that runs the trial loop, in the order things happen and the
    callbacks were given; keep them quick (a slow hook delays the next trial's start and the pruner's decisions).
    ``exp`` is the live Experiment (``exp.stop()`` ends the run gracefully); ``trial`` is what the record knows of
    a trial: ``trial_id``, ``params``, ``state``, ``value``, ``steps``, ``attempts``, ``last`` (the last value of
    each metric), ``error``, ``labels`` (an ablation trial's left-out component).
    """

    def on_experiment_start(self, exp: Experiment) -> None:
        """Before the first trial starts."""

    def on_trial_start(self, exp: Experiment, trial: TrialRecord) -> None:
        """A trial was sent to run (it may wait on its worker behind another one: ``trial.queued``)."""

    def on_trial_report(
        self, exp: Experiment, trial: TrialRecord, step: int, metrics: dict[str, float]
    ) -> None:
        """One ``report(step=..., **metrics)`` of a running trial, in the order it was made."""

    def on_trial_retry(self, exp: Experiment, trial: TrialRecord, error: str) -> None:
        """An attempt of the trial raised and it runs again (``max_failures=``); ``error`` is that attempt's
        traceback (Ray Tune's ``on_trial_error`` / ``on_trial_recover``)."""

    def on_trial_end(self, exp: Experiment, trial: TrialRecord) -> None:
        """A trial ended (``trial.state``: completed, pruned, failed, stopped), its value judged and told to the
        sampler."""

    def on_experiment_end(self, exp: Experiment) -> None:
        """The run ended; ``exp.state`` is final."""


# The hooks a report reaches: only callbacks that override it make the run send reports to the loop.
_REPORT_HOOK = "on_trial_report"


def check_callbacks(callbacks: Any, source: Any = None) -> tuple[Callback, ...]:
    """``callbacks=``: None or a list of Callback instances and Optuna callbacks (functions, for a run whose
    ``source`` searches with Optuna); an ArgumentError naming the one that cannot be."""
    if callbacks is None:
        return ()
    if isinstance(callbacks, Callback) or not isinstance(callbacks, Iterable) or isinstance(callbacks, str):
        raise ArgumentError(f"callbacks={callbacks!r:.60}: give a list of jupyter_dist.Callback instances")
    checked = tuple(_as_callback(callback) for callback in callbacks)
    optuna_style = [c for c in checked if isinstance(c, OptunaCallback)]
    if optuna_style and not hasattr(source, "frozen_trial"):
        raise ArgumentError(
            f"callbacks=[{optuna_style[0]!r}]: a plain function is an Optuna callback f(study, frozen_trial), "
            "and only an hpo run has an Optuna study; subclass jupyter_dist.Callback and override "
            "on_trial_end(exp, trial) (or another hook)"
        )
    return checked


def _as_callback(callback: Any) -> Callback:
    """One entry of ``callbacks=`` as a Callback: an instance as it is; a plain function is Optuna's
    ``f(study, frozen_trial)`` (``OptunaCallback``)."""
    if isinstance(callback, Callback):
        return callback
    if isinstance(callback, type) and issubclass(callback, Callback):
        raise ArgumentError(
            f"callbacks=[{callback.__name__}]: that is the class; give an instance, {callback.__name__}()"
        )
    if callable(callback):
        return OptunaCallback(callback)
    raise ArgumentError(
        f"callbacks=[{callback!r:.60}]: not a jupyter_dist.Callback instance nor a function f(study, frozen_trial)"
    )


class OptunaCallback(Callback):
    """An Optuna callback, ``f(study, frozen_trial)`` (optuna.study.Study.optimize's ``callbacks=``; e.g.
    optuna-integration's MLflowCallback), called as each trial ends with the search's own study and the trial as
    Optuna was told it. Only an HPO run has a study: with another kind it is refused before any work starts."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.search: Any = None  # the run's OptunaSearch, given when the run starts (CallbackHooks)
        # Each running trial's objective curve in its current attempt: (attempt, scope tracker, step -> value).
        self._curves: dict[int, tuple[int, Any, dict[int, float]]] = {}

    def on_trial_report(
        self, exp: Experiment, trial: TrialRecord, step: int, metrics: dict[str, float]
    ) -> None:
        # The trial's intermediate values as the pruner was given them (the objective under its scope), kept here:
        # Optuna's own trial holds only those a pruner judged, none without a pruner.
        objective = exp.record.definition.objective
        value = metrics.get(objective.metric) if objective.metric is not None else None
        if value is None:
            return
        curve = self._curves.get(trial.trial_id)
        if curve is None or curve[0] != trial.attempts:  # a new attempt (a retry) starts its curve again
            curve = self._curves[trial.trial_id] = (trial.attempts, objective.tracker(), {})
        _, tracker, steps = curve
        scoped = tracker.add(value)
        steps.setdefault(step, scoped)

    def on_trial_end(self, exp: Experiment, trial: TrialRecord) -> None:
        frozen = self.search.frozen_trial(trial.trial_id)
        # The last attempt's curve, as exp.study holds it.
        frozen.intermediate_values = self._curves.pop(trial.trial_id, (None, None, {}))[2]
        self.fn(self.search.study, frozen)

    def __repr__(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


def describe(callbacks: tuple[Callback, ...]) -> list[str]:
    """What the definition's details keep of them (JSON): their class names."""
    return [repr(c) if isinstance(c, OptunaCallback) else type(c).__qualname__ for c in callbacks]


class CallbackHooks:
    """The run's callbacks as the trial loop's watcher: trial ids become the record's trials, and a hook that
    raises becomes a HookFailed naming it."""

    def __init__(self, callbacks: tuple[Callback, ...], exp: Experiment, source: Any = None) -> None:
        for callback in callbacks:
            if isinstance(callback, OptunaCallback):
                callback.search = source
                source.keep_history()  # the callback may read study.trials: the search keeps every trial
        self.callbacks = callbacks
        self.exp = exp
        self.record = exp.record
        self.reporting = [c for c in callbacks if _overrides(c, _REPORT_HOOK)]
        self.wants_reports = bool(self.reporting)

    def experiment_started(self) -> None:
        self._call(self.callbacks, "on_experiment_start", self.exp)

    def trial_started(self, trial_id: int) -> None:
        self._call(self.callbacks, "on_trial_start", self.exp, self.record.trial(trial_id))

    def trial_reported(self, trial_id: int, rows: list) -> None:
        trial = self.record.trial(trial_id)
        for step, metrics, _ in rows:
            self._call(self.reporting, _REPORT_HOOK, self.exp, trial, step, dict(metrics))

    def trial_retried(self, trial_id: int, error: str) -> None:
        self._call(self.callbacks, "on_trial_retry", self.exp, self.record.trial(trial_id), error)

    def trial_ended(self, trial_id: int) -> None:
        self._call(self.callbacks, "on_trial_end", self.exp, self.record.trial(trial_id))

    def experiment_ended(self) -> None:
        self._call(self.callbacks, "on_experiment_end", self.exp)

    @staticmethod
    def _call(callbacks: Iterable[Callback], hook: str, *args: Any) -> None:
        for callback in callbacks:
            try:
                getattr(callback, hook)(*args)
            except Exception as exc:
                name = repr(callback) if isinstance(callback, OptunaCallback) else type(callback).__qualname__
                raise HookFailed(f"callback {name}.{hook} raised {type(exc).__name__}: {exc}") from exc


def _overrides(callback: Callback, hook: str) -> bool:
    return getattr(type(callback), hook) is not getattr(Callback, hook)
