"""Named states instead of bare strings: ``str`` enums, so ``exp.state == "completed"`` and the DataFrames' plain
strings keep working, and the store keeps their plain values."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from ..errors import ArgumentError

__all__ = ["Direction", "ErrorKind", "ExperimentKind", "ExperimentState", "TrialState"]


class _StrEnum(str, Enum):
    def __str__(self) -> str:  # f-strings and str() give the plain value, as enum.StrEnum (3.11+) does
        return self.value


class ExperimentKind(_StrEnum):
    """What an experiment runs; each kind is one entry of the registry in jupyter_dist/kinds/. The store keeps
    these values, so a stored experiment loads back as its kind."""

    HPO = "hpo"
    ABLATION = "ablation"
    DDP = "ddp"
    PBT = "pbt"


class TrialState(_StrEnum):
    """A trial's state, as ``exp.trials`` and the store say it: running, then completed, pruned (stopped early
    by the pruner), failed, stopped (with the experiment: Stop button, interrupt, timeout) or interrupted
    (running when its kernel went away, found so in the store)."""

    RUNNING = "running"
    COMPLETED = "completed"
    PRUNED = "pruned"  # stopped early by the pruner
    FAILED = "failed"
    STOPPED = "stopped"  # stopped with the experiment (Stop button, interrupt, timeout)
    INTERRUPTED = "interrupted"  # running when its kernel went away (found so in the store)

    @property
    def finished(self) -> bool:
        """No longer running."""
        return self is not TrialState.RUNNING

    @property
    def done(self) -> bool:
        """Counts towards the experiment's total (it ran to its end, or was pruned or stopped). An interrupted
        trial is not done: a resumed run runs it again."""
        return self not in (TrialState.RUNNING, TrialState.INTERRUPTED)


class ExperimentState(_StrEnum):
    """An experiment's state (``exp.state``): running, then completed, stopped, failed, or interrupted (found
    in the store still running with its kernel gone)."""

    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    # Found in the store still "running" with its kernel gone (killed, crashed, the machine restarted).
    INTERRUPTED = "interrupted"


class Direction(_StrEnum):
    """Which way the objective is better: ``mode="max"`` or ``mode="min"``."""

    MAX = "max"
    MIN = "min"

    @classmethod
    def parse(cls, mode: Any) -> Direction:
        """The Direction of a ``mode=`` argument; an ArgumentError for anything but "max" or "min"."""
        try:
            return cls(mode)
        except ValueError:
            raise ArgumentError(f"mode={mode!r}: use 'max' or 'min'") from None

    @property
    def optuna(self) -> Literal["maximize", "minimize"]:
        """As Optuna names it, ``"maximize"`` or ``"minimize"``."""
        return "maximize" if self is Direction.MAX else "minimize"

    def better(self, a: float, b: float) -> bool:
        """Whether ``a`` is better than ``b`` this way."""
        return a > b if self is Direction.MAX else a < b


class ErrorKind(_StrEnum):
    """Why a trial failed, so code decides on a kind rather than by searching the traceback's text."""

    TRIAL = "trial"  # the training function raised
    SETUP = "setup"  # a jupyter_dist error inside the trial: the experiment as set up cannot run (every trial would)
    RESULT = "result"  # it returned something that is not a number, a dict of metrics or None
    METRIC = "metric"  # the objective's metric was neither reported nor returned, or is NaN
    # It ran out of memory, on a GPU or on the host (MemoryError): at the same parameters it would again
    MEMORY = "memory"
    LOST = "lost"  # its task was lost: the worker died, Dask gave up on it
    ABANDONED = "abandoned"  # it did not stop when told to, or the run was interrupted
