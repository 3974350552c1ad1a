"""What every kind of experiment shares: how and where it runs (``RunOptions``), and what a kind hands the run
(``TrialPlan``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._validate import check_positive, check_progress
from ..protocol import check_scope
from ..runtime import TrialSource
from ..store import ExperimentDefinition

__all__ = ["RunOptions", "TrialPlan"]


@dataclass(frozen=True)
class RunOptions:
    """How and where an experiment runs, whatever its kind: the options hpo(), ablation() and data_parallel()
    share (``hpo()``'s docstring says what each does)."""

    cluster: Any = None
    parallel: int | None = None  # trials at once; None: what the cluster can run, followed as it changes
    progress: Any = "auto"
    store: Any = None  # None: the default store; a file path; False: memory only
    resume: bool = False
    # None: the training function's name (the first free name-2, name-3... in a store)
    name: str | None = None
    timeout: float | None = None
    # GPUs each task of a trial holds: a single-task trial's (gpus_per_trial=), each rank's (gpus_per_worker=).
    # Its own kind checks it, as the argument its user named.
    gpus: float | None = None
    checkpoint_dir: Any = None
    keep_checkpoints: int = 2
    # --- the trial loop's control (jupyter_dist/_control.py): callbacks, a per-trial stop rule, the experiment's
    # target, which of a trial's reports make its value. None: none, or, with resume, what the stored run had
    # (the callbacks and a stop function excepted: they are not stored, only named).
    callbacks: Any = None
    stop: Any = None
    target: float | None = None
    objective_scope: str | None = None

    def check(self) -> None:
        """Refuse options that cannot work, before any work starts."""
        check_positive("parallel", self.parallel)
        check_progress(self.progress)
        check_positive("timeout", self.timeout, integer=False)
        if self.objective_scope is not None:
            check_scope(self.objective_scope)

    @property
    def scope(self) -> str:
        """The objective's scope (``Objective.scope``) the kinds build their objective with."""
        return self.objective_scope or "last"

    @property
    def resources(self) -> dict[str, float] | None:
        """The Dask resources each task of a trial needs (None: any worker)."""
        return {"GPU": self.gpus} if self.gpus else None

    def experiment_name(self, fn: Callable) -> str:
        return self.name or fn.__name__


@dataclass(frozen=True)
class TrialPlan:
    """What a kind runs: the experiment's definition, the training function as the workers run it (wrapped, for
    an ablation study's or a data-parallel trial), the source of its trials, and (``ranks``) whether every trial
    is a data-parallel job of that many rank tasks."""

    definition: ExperimentDefinition
    fn: Callable
    source: TrialSource
    ranks: int | None = None
