"""The Python API: ``hpo()``, ``pbt()``, ``ablation()`` and ``data_parallel()`` turn a plain training function
into an experiment on Dask.

Each entry point keeps an explicit signature (for IDEs and ``help()``) and does nothing but hand its arguments to
its kind: the kind (jupyter_dist/kinds/) sorts them into the options every kind shares (``RunOptions``) and its own
(its ``arguments`` dataclass), checks them before any work starts and says what to run; _orchestrate.run_kind
does the rest, the same way for every kind. Every option is defined once, with its help, in those dataclasses:
the ``Parameters`` below are written from them (``_documented``), and tests/test_api_signatures.py checks that
each signature names what its kind defines, with the same defaults.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ._compare import Comparison, compare
from ._orchestrate import run_kind
from ._stored import experiments, load
from .cluster import cluster_info, use_cluster
from .experiment import Experiment
from .kinds import kind_of
from .kinds._spec import parameters_doc
from .protocol import ExperimentKind
from .search import DEFAULT_PRUNER

__all__ = [
    "Comparison",
    "ablation",
    "cluster_info",
    "compare",
    "data_parallel",
    "experiments",
    "hpo",
    "load",
    "pbt",
    "use_cluster",
]


def hpo(
    fn: Callable,
    search_space: dict[str, Any],
    trials: int | None = 32,
    metric: str | list[str] | None = None,
    mode: str | list[str] = "max",
    sampler: Any = "tpe",
    pruner: Any = DEFAULT_PRUNER,
    cluster: Any = None,
    parallel: int | None = None,
    name: str | None = None,
    seed: int | None = None,
    max_steps: int | None = None,
    timeout: float | None = None,
    progress: Any = "auto",
    workers_per_trial: int = 1,
    min_workers_per_trial: int | None = None,
    max_workers_per_trial: int | None = None,
    elastic_timeout: float | None = None,
    store: Any = None,
    resume: bool = False,
    gpus_per_trial: float | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
    enqueue: list[dict[str, Any]] | None = None,
    callbacks: list | None = None,
    stop: dict[str, float] | Callable[[int, dict[str, float]], bool] | None = None,
    target: float | None = None,
    objective_scope: str | None = None,
    max_failures: int | None = None,
    cpus_per_trial: int | None = None,
    resources: dict[str, float] | None = None,
    gpu_type: str | list[str] | None = None,
    constraints: Callable[[dict[str, float]], Any] | None = None,
    warm_start: Any = None,
    sampler_window: int | None = None,
) -> Experiment:
    """Run ``fn`` as asynchronous hyperparameter-optimisation trials on Dask and return the Experiment."""
    return _run(ExperimentKind.HPO, fn, locals())


def pbt(
    fn: Callable,
    search_space: dict[str, Any],
    population: int = 8,
    metric: str | None = None,
    mode: str = "max",
    perturbation_interval: int = 4,
    quantile: float = 0.25,
    resample_probability: float = 0.25,
    max_steps: int | None = None,
    mutations: dict[str, Any] | None = None,
    cluster: Any = None,
    parallel: int | None = None,
    name: str | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    progress: Any = "auto",
    workers_per_trial: int = 1,
    store: Any = None,
    resume: bool = False,
    gpus_per_trial: float | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
    callbacks: list | None = None,
    target: float | None = None,
    max_failures: int | None = None,
    cpus_per_trial: int | None = None,
    resources: dict[str, float] | None = None,
    gpu_type: str | list[str] | None = None,
) -> Experiment:
    """Run ``fn`` as population-based training (Jaderberg et al. 2017) on Dask and return the
    PopulationExperiment: ``population`` members train at once, and every ``perturbation_interval`` steps a
    member in the bottom ``quantile`` goes on from a top member's newest checkpoint with that member's
    hyperparameters perturbed, so the hyperparameters become schedules found while training.

    ``fn`` is an ordinary training function that reports each step and saves and loads its state with
    ``jupyter_dist.checkpoint(step, state)`` / ``jupyter_dist.restore(state)`` (a function that never calls them
    is refused before anything runs): each member runs in segments, one trial each, that end at the segment's
    last checkpoint; as each ends its member's next segment is decided, without waiting for the others.
    """
    return _run(ExperimentKind.PBT, fn, locals())


def data_parallel(
    fn: Callable,
    workers: int = 2,
    gpus_per_worker: float = 0,
    backend: str | None = None,
    cluster: Any = None,
    timeout: float | None = None,
    *,
    name: str | None = None,
    metric: str | None = None,
    threads_per_rank: int | None = None,
    rendezvous_timeout: float = 60.0,
    progress: Any = "auto",
    store: Any = None,
    strategy: str = "ddp",
    mixed_precision: str | None = None,
    resume: bool = False,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
    callbacks: list | None = None,
    stop: dict[str, float] | Callable[[int, dict[str, float]], bool] | None = None,
    resources: dict[str, float] | None = None,
    min_workers: int | None = None,
    max_workers: int | None = None,
    elastic_timeout: float | None = None,
    **kwargs_for_train: Any,
):
    """Run ``fn(**kwargs_for_train)`` data-parallel: one rank per Dask worker, ``workers`` ranks, joined in a
    torch.distributed process group; return the DataParallelExperiment (``.result`` is rank 0's return value).

    Inside ``fn``, ``model, optimizer, loader = jupyter_dist.prepare(model, optimizer, loader)`` moves the model
    to the rank's device and wraps it in DistributedDataParallel (or shards it with FSDP), and shards the
    DataLoader; ``report()`` from rank 0 streams live (other ranks' reports are dropped: only their stop signal
    counts). ``jupyter_dist.gather()`` / ``gather_for_metrics()`` collect the ranks' predictions for evaluation.
    """
    return _run(ExperimentKind.DDP, fn, locals())


def ablation(
    fn: Callable,
    features: list[str] | None = None,
    modules: list[str] | None = None,
    flags: list[str] | None = None,
    groups: dict[str, list[str]] | None = None,
    metric: str | None = None,
    mode: str = "max",
    repeats: int = 1,
    cluster: Any = None,
    name: str | None = None,
    params: dict[str, Any] | None = None,
    seed: int = 0,
    parallel: int | None = None,
    timeout: float | None = None,
    progress: Any = "auto",
    store: Any = None,
    resume: bool = False,
    gpus_per_trial: float | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
    callbacks: list | None = None,
    objective_scope: str | None = None,
    max_failures: int | None = None,
    cpus_per_trial: int | None = None,
    resources: dict[str, float] | None = None,
    gpu_type: str | list[str] | None = None,
):
    """Run an ablation study of ``fn`` on Dask: a baseline with every component, then one trial per component
    left out (and one per group), each ``repeats`` times; return the AblationExperiment.
    """
    return _run(ExperimentKind.ABLATION, fn, locals())


def _run(kind: str, fn: Callable, given: dict[str, Any]) -> Any:
    """Run ``fn`` as an experiment of ``kind`` with an entry point's arguments (its ``locals()``)."""
    chosen = kind_of(kind)
    arguments = {name: value for name, value in given.items() if name != "fn"}
    options, args = chosen.sort(arguments)
    return run_kind(chosen, fn, options, args)


# The one argument of every entry point that is no option.
FN_HELP = (
    "The training function. Its arguments are the hyperparameters (passed by keyword); it reports with "
    "``jupyter_dist.report(...)`` and returns a number, a dict of metrics, or None."
)


def _documented(entry_point: Callable, kind: str) -> None:
    """Append the entry point's ``Parameters``, written from its kind's option definitions."""
    order = list(inspect.signature(entry_point).parameters)
    section = parameters_doc(kind_of(kind).entries(), order, before={"fn": FN_HELP})
    entry_point.__doc__ = (entry_point.__doc__ or "").rstrip() + "\n\n" + section + "\n    "


_documented(hpo, ExperimentKind.HPO)
_documented(pbt, ExperimentKind.PBT)
_documented(ablation, ExperimentKind.ABLATION)
_documented(data_parallel, ExperimentKind.DDP)
