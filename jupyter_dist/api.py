"""The Python API: ``hpo()``, ``ablation()`` and ``data_parallel()`` turn a plain training function into an
experiment on Dask.

Each entry point validates its arguments before any work starts and says what to run (a trial source, the
function as the workers run it, the experiment's definition); _orchestrate.run_experiment does the rest, the same
way for every kind.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from ._orchestrate import run_experiment
from ._stored import experiments, finished_and_rerun, load, prior_run
from ._validate import check_callable, check_metric, check_positive, check_progress
from .checkpoints import checkpoint_settings
from .errors import ArgumentError
from .experiment import Experiment
from .protocol import Direction, ExperimentKind, Objective
from .runtime import cluster_info, use_cluster
from .space import searched, validate_space
from .store import ExperimentDefinition, InMemoryRecord, store_path

__all__ = ["ablation", "cluster_info", "data_parallel", "experiments", "hpo", "load", "use_cluster"]


def hpo(
    fn: Callable,
    search_space: dict[str, Any],
    trials: int | None = 32,
    metric: str | None = None,
    mode: str = "max",
    sampler: Any = "tpe",
    pruner: Any = "asha",
    cluster: Any = None,
    parallel: int | None = None,
    name: str | None = None,
    seed: int | None = None,
    max_steps: int | None = None,
    timeout: float | None = None,
    progress: Any = "auto",
    workers_per_trial: int = 1,
    store: Any = None,
    resume: bool = False,
    gpus_per_trial: int | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
) -> Experiment:
    """Run ``fn`` as asynchronous hyperparameter-optimisation trials on Dask and return the Experiment.

    Parameters
    ----------
    fn
        The training function. Searched arguments are passed by keyword; it reports with
        ``jupyter_dist.report(...)`` and returns a number, a dict of metrics, or None.
    search_space
        ``{argument: space.uniform(...) | space.loguniform(...) | space.integer(...) | space.choice([...])}``;
        plain values are constants passed to every trial.
    trials
        How many trials to run (with ``sampler="grid"``: at most the grid's size; None means the whole grid,
        or, with ``timeout``, as many as fit in the time).
    metric, mode
        The objective's name and whether to maximise ("max") or minimise ("min") it.
    sampler
        "tpe", "random", "grid", "gp", "cmaes", or an ``optuna.samplers.BaseSampler`` instance.
    pruner
        Early stopping of running trials: "asha" (the default), "median", "hyperband", an
        ``optuna.pruners.BasePruner`` instance, or None (every trial runs to its end). Decided in the kernel from the streamed reports of ``metric``; the trial's next
        ``report()`` raises ``TrialPruned``.
    cluster
        None (``%distribute_cluster``'s choice, ``JUPYTER_DIST_CLUSTER``, dask config ``jupyter_dist.cluster``,
        else the embedded LocalCluster), "local", "gateway" (a Dask Gateway cluster of the user's own), a
        scheduler address ("tcp://host:8786", "tls://..."), a ``distributed.Client``, or a Dask cluster object.
    parallel
        Trials in flight at once; default: the cluster's worker threads.
    name
        A name for the experiment (default: the function's name).
    seed
        Seeds the sampler, making the search reproducible.
    max_steps
        The most steps a trial reports (its budget): places the ASHA/Hyperband rungs and measures the compute
        pruning saved.
    timeout
        Seconds for the whole experiment: then no trial starts and the running ones are stopped.
    progress
        "auto" (in JupyterLab with jupyter_dist's extension the view it draws, in another notebook a live
        widget, text elsewhere), "lab", "widget", "text", False, or a callable ``view(experiment)`` returning an
        object with ``start()``, ``idle()`` and ``finish()``.
    workers_per_trial
        k > 1 makes every trial a k-rank data-parallel job, as ``data_parallel(fn, workers=k)`` runs it
        (``prepare()`` inside the function); ``parallel`` then defaults to the workers // k.
    store
        Where the experiment is recorded as it runs: None, the default store (``JUPYTER_DIST_STORE``, dask
        config ``jupyter_dist.store``, or Jupyter's data directory); a file path; False, nowhere (memory only).
    resume
        Continue the stored experiment ``name`` (after a kernel restart, a crash, a stop, or to run more trials):
        its finished trials are kept and told to the sampler and the pruner, the trials it left unfinished run
        again, and it stops when ``trials`` trials in all have finished.
    gpus_per_trial
        Each trial runs only on a worker that declares that many free ``GPU`` resources (``dask worker
        --resources GPU=2``) and holds that many of its devices while it runs (``jupyter_dist.devices()``), so
        two trials never share one; ``parallel`` defaults to how many trials the workers' GPUs allow.
    checkpoint_dir, keep_checkpoints
        Where the trials' ``jupyter_dist.checkpoint()`` calls save (default: ``checkpoints`` beside the store;
        a shared path or an fsspec URL on several hosts), and how many each trial keeps (the newest).
    """
    from .search import OptunaSearch

    objective = _check_common(ExperimentKind.HPO, fn, metric, mode, parallel, progress)
    check_positive("max_steps", max_steps)
    check_positive("timeout", timeout, integer=False)
    check_positive("workers_per_trial", workers_per_trial, optional=False)
    check_positive("gpus_per_trial", gpus_per_trial)
    if gpus_per_trial and workers_per_trial > 1:
        raise ArgumentError(
            "gpus_per_trial= places single-process trials; it is not combined with workers_per_trial > 1 "
            "(GPUs for each rank of an HPO trial): use one or the other"
        )
    validate_space(fn, search_space)
    store_file = store_path(store)
    prior = (
        prior_run(store_file, name, ExperimentKind.HPO, metric, objective.direction.value) if resume else None
    )
    search = OptunaSearch(
        search_space,
        trials=trials,
        objective=objective,
        sampler=sampler,
        pruner=pruner,
        max_steps=max_steps,
        seed=seed,
        unlimited=timeout is not None,
    )
    definition = ExperimentDefinition(
        ExperimentKind.HPO,
        name or fn.__name__,
        objective,
        dict(search_space),
        total=search.total,
        max_steps=max_steps,
        timeout=timeout,
        details={
            "sampler": repr(sampler),
            "pruner": repr(pruner),
            "seed": seed,
            "workers_per_trial": workers_per_trial,
            "checkpoints": checkpoint_settings(checkpoint_dir, keep_checkpoints, store_file),
        },
    )
    if prior is not None:
        definition = _continue_search(prior, definition, search)
    if workers_per_trial > 1:
        from .ddp import DataParallelTrial

        fn = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
    return run_experiment(
        definition,
        fn,
        search,
        cluster=cluster,
        parallel=parallel,
        progress=progress,
        ranks=workers_per_trial if workers_per_trial > 1 else None,
        resources={"GPU": gpus_per_trial} if gpus_per_trial else None,
        store=store_file,
        name_given=name is not None,
        resume=prior,
    )


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
    **kwargs_for_train: Any,
):
    """Run ``fn(**kwargs_for_train)`` data-parallel: one rank per Dask worker, ``workers`` ranks, joined in a
    torch.distributed process group; return the DataParallelExperiment (``.result`` is rank 0's return value).

    Inside ``fn``, ``model, optimizer, loader = jupyter_dist.prepare(model, optimizer, loader)`` moves the model
    to the rank's device and wraps it in DistributedDataParallel (or shards it with FSDP), and shards the
    DataLoader; ``report()`` from rank 0 streams live (other ranks' reports are dropped: only their stop signal
    counts). ``jupyter_dist.gather()`` / ``gather_for_metrics()`` collect the ranks' predictions for evaluation.

    Parameters
    ----------
    workers
        Ranks, each on its own Dask worker process (two ranks in one process would deadlock).
    gpus_per_worker
        GPUs per rank: ranks go to workers with at least this much of the Dask resource ``GPU``.
    backend
        "gloo" or "nccl"; None picks NCCL with GPUs and gloo without.
    timeout
        Seconds for the whole run, then it is stopped (its next report() raises TrialPruned on every rank).
    metric
        The metric drawn live (default: the first one rank 0 reports).
    threads_per_rank
        torch's intra-op threads in each rank (default: the worker's, 1 under a Dask nanny).
    rendezvous_timeout
        Seconds for every rank to join; more than that means not enough workers were free at once.
    store
        As for ``hpo()``; rank 0's and every rank's return values are stored when they pickle (up to 64 MiB).
    strategy
        What ``prepare(model)`` does in this run unless told otherwise: "ddp" (DistributedDataParallel: every
        rank holds the whole model) or "fsdp" (FSDP2's ``fully_shard``: each rank holds a shard of every
        parameter, its gradient and its optimizer state).
    mixed_precision
        What ``prepare()`` applies in this run unless told otherwise: "bf16" or "fp16" (the model's forward
        under ``torch.autocast``; with fp16 a gradient scaler: call ``jupyter_dist.backward(loss)``), or None.
    resume
        Run the stored data-parallel run ``name`` again (it failed, was stopped or interrupted) as its next
        attempt: with ``jupyter_dist.restore()`` in ``fn`` it goes on from its last checkpoint.
    checkpoint_dir, keep_checkpoints
        As for ``hpo()``.
    """
    from .ddp import DataParallelExperiment, DataParallelTrial, SingleRun, check_data_parallel

    check_callable(fn)
    check_progress(progress)
    check_positive("workers", workers, optional=False)
    check_positive("timeout", timeout, integer=False)
    check_positive("threads_per_rank", threads_per_rank)
    check_positive("rendezvous_timeout", rendezvous_timeout, integer=False, optional=False)
    if metric is not None and (not isinstance(metric, str) or not metric):
        raise ArgumentError(f"metric={metric!r}: give the name of a metric rank 0 reports, or None")
    check_data_parallel(gpus_per_worker, backend, strategy=strategy, mixed_precision=mixed_precision)
    validate_space(fn, kwargs_for_train)
    store_file = store_path(store)
    prior = prior_run(store_file, name, ExperimentKind.DDP, metric, "max") if resume else None

    definition = ExperimentDefinition(
        ExperimentKind.DDP,
        name or fn.__name__,
        Objective(metric),
        dict(kwargs_for_train),
        total=1,
        timeout=timeout,
        details={
            "workers": workers,
            "gpus_per_worker": gpus_per_worker,
            "backend": backend,
            "strategy": strategy,
            "mixed_precision": mixed_precision,
            "checkpoints": checkpoint_settings(checkpoint_dir, keep_checkpoints, store_file),
        },
    )
    if prior is not None:  # the same id and name, so the same checkpoints; this call's arguments
        definition = dataclasses.replace(
            prior.definition, space=definition.space, timeout=timeout, details=definition.details
        )
    trial_fn = DataParallelTrial(
        fn,
        backend=backend,
        gpus_per_worker=gpus_per_worker,
        threads=threads_per_rank,
        rendezvous_timeout=rendezvous_timeout,
        strategy=strategy,
        mixed_precision=mixed_precision,
    )
    return run_experiment(
        definition,
        trial_fn,
        SingleRun(kwargs_for_train),
        cluster=cluster,
        parallel=1,
        progress=progress,
        make_experiment=lambda record, stop: DataParallelExperiment(record, stop, workers=workers),
        ranks=workers,
        resources={"GPU": gpus_per_worker} if gpus_per_worker else None,
        store=store_file,
        name_given=name is not None,
        resume=prior,
    )


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
    gpus_per_trial: int | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
):
    """Run an ablation study of ``fn`` on Dask: a baseline with every component, then one trial per component
    left out (and one per group), each ``repeats`` times; return the AblationExperiment.

    Parameters
    ----------
    features
        Names of input features. ``fn`` takes a ``features`` argument: the baseline gets the whole list, the
        trial that leaves feature f out gets the list without f (order kept).
    modules
        Dotted submodule names, as in ``model.named_modules()``. ``fn`` calls ``model = jupyter_dist.ablate(model)``
        once it has built the model; in the trial that leaves a module out it is replaced by an identity.
    flags
        Boolean arguments of ``fn`` that default to True; the trial that leaves flag g out passes ``g=False``.
    groups
        ``{name: [component, ...]}``: components (from the three lists) left out together in one more trial.
    metric, mode
        The metric to compare (reported or returned by ``fn``) and whether higher ("max") or lower is better.
    repeats
        Runs per variant. Repeat r passes ``seed=seed + r`` to every variant when ``fn`` takes ``seed``, so each
        comparison with the baseline is paired; the summary then has a mean and a std per component.
    params
        Fixed arguments for every trial (e.g. the best hyperparameters an HPO experiment found).
    cluster, name, parallel, timeout, progress, store, resume, gpus_per_trial, checkpoint_dir, keep_checkpoints
        As for ``hpo()``.
    """
    from .ablation import AblationExperiment, AblationSource, AblationTrial, plan_study

    objective = _check_common(ExperimentKind.ABLATION, fn, metric, mode, parallel, progress)
    check_positive("timeout", timeout, integer=False)
    check_positive("gpus_per_trial", gpus_per_trial)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"seed={seed!r}: give an int")
    plan = plan_study(
        fn,
        features=features,
        modules=modules,
        flags=flags,
        groups=groups,
        repeats=repeats,
        params=params,
        seed=seed,
    )
    store_file = store_path(store)
    definition = ExperimentDefinition(
        ExperimentKind.ABLATION,
        name or fn.__name__,
        objective,
        dict(params or {}),
        total=len(plan.trials),
        timeout=timeout,
        details={
            "variants": [dataclasses.asdict(v) for v in plan.variants],
            "repeats": repeats,
            "seed": seed,
            "checkpoints": checkpoint_settings(checkpoint_dir, keep_checkpoints, store_file),
        },
    )
    done: set[int] = set()
    prior = (
        prior_run(store_file, name, ExperimentKind.ABLATION, metric, objective.direction.value)
        if resume
        else None
    )
    if prior is not None:
        # as JSON, which is how the store holds them (tuples come back as lists)
        if json.dumps(prior.definition.details.get("variants")) != json.dumps(definition.details["variants"]):
            raise ArgumentError(
                f"{name!r} studied other components; resume it with the same features, modules, flags and groups"
            )
        done = {rec.trial_id for rec in finished_and_rerun(prior)[0]}
        details = {**prior.definition.details, "checkpoints": definition.details["checkpoints"]}
        definition = dataclasses.replace(prior.definition, timeout=timeout, details=details)
    return run_experiment(
        definition,
        AblationTrial(fn, plan.modules, plan.removed_modules()),
        AblationSource(plan, done=done),
        cluster=cluster,
        parallel=parallel,
        progress=progress,
        make_experiment=lambda record, stop: AblationExperiment(record, stop, plan=plan),
        resources={"GPU": gpus_per_trial} if gpus_per_trial else None,
        store=store_file,
        name_given=name is not None,
        resume=prior,
    )


def _check_common(what: str, fn: Any, metric: Any, mode: Any, parallel: Any, progress: Any) -> Objective:
    """The checks hpo() and ablation() share; returns their objective."""
    check_callable(fn)
    check_metric(what, metric)
    check_positive("parallel", parallel)
    check_progress(progress)
    return Objective(metric, Direction.parse(mode))


def _continue_search(prior: InMemoryRecord, definition: ExperimentDefinition, search) -> ExperimentDefinition:
    """Set ``search`` up to continue the stored run; the definition it continues under (same id and name)."""
    stored = set(searched(prior.definition.space))
    if stored != set(search.searched):
        raise ArgumentError(
            f"{prior.definition.name!r} searched {sorted(stored)}; resume it with the same search space, not "
            f"{sorted(search.searched)}"
        )
    finished, rerun = finished_and_rerun(prior)
    attempts = {rec.trial_id: rec.attempts - 1 for rec in finished}
    curves: dict[int, dict[int, float]] = {}
    for trial_id, attempt, step, metric, value, _ in prior.report_rows():
        if metric == definition.objective.metric and attempts.get(trial_id) == attempt:
            curves.setdefault(trial_id, {}).setdefault(step, value)
    search.resume(finished, rerun, curves)
    return dataclasses.replace(
        prior.definition,
        total=search.total,
        max_steps=definition.max_steps,
        timeout=definition.timeout,
        details=definition.details,
    )
