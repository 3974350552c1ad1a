"""The trackers' callbacks' common part: each experiment a callback hears of is sent, as events
(``jupyter_dist.tracking``), to an export process of its own."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from .._callbacks import Callback
from ..tracking import (
    ExperimentInfo,
    ExperimentStarted,
    TrialEnded,
    TrialInfo,
    TrialStarted,
    experiment_ended,
    experiment_info,
)

if TYPE_CHECKING:
    from ..experiment import Experiment
    from ..store import TrialRecord

__all__ = ["TrackingCallback"]


class TrackingCallback(Callback):
    """A Callback that sends each experiment it hears of to a tracker, from a process of its own, without slowing
    the kernel.

    One instance may serve several experiments, one after the other or at once: each has its export process."""

    def __init__(self, timeout: float) -> None:
        if not (isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout >= 0):
            raise ValueError(
                f"timeout={timeout!r}: give the seconds the export may take at the kernel's exit (>= 0)"
            )
        self.timeout = float(timeout)
        self._exporters: dict[str, Any] = {}

    @abstractmethod
    def destination(self, experiment: ExperimentInfo) -> tuple[str, dict[str, Any]]:
        """How the export process makes this experiment's writer: ``"module:Class"`` and its keyword arguments
        (plain values; made on the kernel's side, so paths are absolute and defaults read here)."""

    @property
    @abstractmethod
    def where(self) -> str:
        """What a warning calls the tracker."""

    @classmethod
    def wait(cls, exp: Any = None, timeout: float | None = None) -> bool:
        """Wait until the experiments this kind of tracker is exporting (every one of this kernel, or ``exp``'s)
        are written there, at most ``timeout`` seconds (None: as long as it takes). True: all of it is there;
        False: not yet, or it failed (a ``RuntimeWarning`` says which, once)."""
        from ..tracking._export_process import wait_for

        return wait_for(cls, exp, timeout)

    def on_experiment_start(self, exp: Experiment) -> None:
        from ..tracking._export_process import Exporter

        info = experiment_info(exp)
        exporter = Exporter(self.destination(info), self.where, exp.name, type(self), self.timeout)
        exporter.experiment_id = exp.id
        self._exporters[exp.id] = exporter
        exporter.put(ExperimentStarted(info))
        # Reports are heard as the record takes them, a batch at a time with the time each was sent, rather than
        # by on_trial_report: that hook is a call per report on the loop's thread, and overriding it makes the run
        # send every report to the loop (measured: a fifth of a tight report loop's rate, bench_tracking).
        exp._add_report_listener(exporter.report)

    def on_trial_start(self, exp: Experiment, trial: TrialRecord) -> None:
        self._exporters[exp.id].put(TrialStarted(TrialInfo.of(trial)))

    def on_trial_end(self, exp: Experiment, trial: TrialRecord) -> None:
        self._exporters[exp.id].put(TrialEnded(TrialInfo.of(trial, ended=True)))

    def on_experiment_end(self, exp: Experiment) -> None:
        # The run does not wait for the export: the process writes the rest on its own time (wait() waits).
        exporter = self._exporters.pop(exp.id, None)
        if exporter is not None:
            exporter.finish(experiment_ended(exp))
