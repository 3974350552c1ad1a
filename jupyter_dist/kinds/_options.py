"""What every kind of experiment shares: how and where it runs (``RunOptions``), and what a kind hands the run
(``TrialPlan``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._validate import check_positive
from ..errors import ArgumentError
from ..protocol import check_scope
from ..store import ExperimentDefinition
from ..trials import Elastic, TrialSource
from ..widgets import check_progress

__all__ = ["RunOptions", "TrialPlan", "check_runtime", "parse_resources"]


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
    # hpo(constraints=): a function of a trial's metrics (trials/_goals.py Constraints)
    constraints: Any = None
    # How trials use the cluster (issue 25; stored in the definition's details, so a resume runs the same way;
    # None: not given, a resumed run keeps the stored value). max_failures: more attempts of a trial whose function
    # raised; cpus_per_trial: cores per trial (trials/_cpus.py); resources: Dask worker resources per task.
    max_failures: int | None = None
    cpus_per_trial: int | None = None
    worker_resources: dict[str, float] | None = None

    def __post_init__(self) -> None:
        # resources={"GPU": n} is gpus_per_trial=n (the trial then holds its devices too): one field says it.
        gpus = (
            (self.worker_resources or {}).get("GPU") if isinstance(self.worker_resources, Mapping) else None
        )
        if gpus is not None and not self.gpus:
            rest = {k: v for k, v in self.worker_resources.items() if k != "GPU"}
            whole = isinstance(gpus, float) and gpus.is_integer()
            object.__setattr__(self, "gpus", int(gpus) if whole else gpus)
            object.__setattr__(self, "worker_resources", rest or None)

    def check(self) -> None:
        """Refuse options that cannot work, before any work starts."""
        check_positive("parallel", self.parallel)
        check_progress(self.progress)
        check_positive("timeout", self.timeout, integer=False)
        if self.objective_scope is not None:
            check_scope(self.objective_scope)
        check_runtime(self.max_failures, self.cpus_per_trial, self.worker_resources)
        if self.worker_resources and "GPU" in self.worker_resources:
            raise ArgumentError(
                f"resources={{'GPU': {self.worker_resources['GPU']!r}}} and {self.gpus!r} GPUs per trial (or "
                "per worker): say the GPUs once, in one or the other"
            )

    @property
    def scope(self) -> str:
        """The objective's scope (``Objective.scope``) the kinds build their objective with."""
        return self.objective_scope or "last"

    @property
    def resources(self) -> dict[str, float] | None:
        """The Dask resources each task of a trial needs (None: any worker): ``resources=`` with the GPUs."""
        needed = dict(self.worker_resources or {})
        if self.gpus:
            needed["GPU"] = self.gpus
        return needed or None

    def runtime_details(self) -> dict[str, Any]:
        """What the definition's details keep of how trials use the cluster."""
        return {
            "max_failures": self.max_failures or 0,
            "cpus_per_trial": self.cpus_per_trial,
            "resources": dict(self.worker_resources or {}),
        }

    def resumed(self, details: dict[str, Any]) -> RunOptions:
        """These options for continuing a stored run: what was not given now is what it ran with."""
        stored = {
            "max_failures": details.get("max_failures"),
            "cpus_per_trial": details.get("cpus_per_trial"),
            "worker_resources": details.get("resources") or None,
        }
        return dataclasses.replace(
            self, **{k: v for k, v in stored.items() if getattr(self, k) is None and v is not None}
        )

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
    # Data-parallel trials that go on at another size when workers leave or come (trials/_elastic.py); None: a
    # job that loses a rank fails.
    elastic: Elastic | None = None


def check_runtime(max_failures: Any, cpus_per_trial: Any, resources: Any) -> None:
    """Refuse a max_failures=, cpus_per_trial= or resources= that cannot work, naming it."""
    if max_failures is not None and (
        isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0
    ):
        raise ArgumentError(f"max_failures={max_failures!r}: give a whole number >= 0 (0: no retries)")
    check_positive("cpus_per_trial", cpus_per_trial)
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise ArgumentError(
            f"resources={resources!r}: give a dict of Dask worker resources per trial, e.g. {{'MEM': 4e9}}"
        )
    for name, amount in resources.items():
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"resources={dict(resources)!r}: {name!r} is not a resource name")
        ok = isinstance(amount, (int, float)) and not isinstance(amount, bool)
        if not ok or not math.isfinite(amount) or amount <= 0:
            raise ArgumentError(
                f"resources={{{name!r}: {amount!r}}}: give a positive amount of {name} (as the workers declare it, "
                f"dask worker --resources {name}=N)"
            )


def parse_resources(text: str | None) -> dict[str, float] | None:
    """``--resources MEM=4e9,GPU=1`` as a dict; an ArgumentError naming a malformed entry."""
    if text is None:
        return None
    resources = {}
    for entry in text.split(","):
        name, sep, amount = entry.strip().partition("=")
        try:
            resources[name.strip()] = float(amount)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise ArgumentError(
                f"--resources {text}: {entry.strip()!r} is not NAME=AMOUNT; write e.g. --resources MEM=4e9,GPU=1"
            ) from None
    return resources
