"""The Python API: ``hpo()`` turns a plain training function into an experiment on Dask.

This module is where the pieces meet: it validates the user's input before any work starts, resolves the
cluster, wires the search (the source) and the Experiment (the sink) to the trial scheduler, and chooses a view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .experiment import Experiment, ExperimentFailed, MetricError
from .runtime import TrialScheduler, get_client, worker_threads
from .space import validate_space

__all__ = ["hpo", "ablation", "data_parallel"]

MODES = ("max", "min")


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
        None (``JUPYTER_DIST_CLUSTER``, else the embedded LocalCluster), "local", a scheduler address
        ("tcp://host:8786"), a ``distributed.Client``, or a Dask cluster object.
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
        "auto" (a live widget in a notebook, text elsewhere), "widget", "text", False, or a callable
        ``view(experiment)`` returning an object with ``start()``, ``idle()`` and ``finish()``.
    workers_per_trial
        k > 1 makes every trial a k-rank data-parallel job, as ``data_parallel(fn, workers=k)`` runs it
        (``prepare()`` inside the function); ``parallel`` then defaults to the workers // k.
    """
    from .search import OptunaSearch

    _check_common("hpo", fn, metric, mode, parallel, progress)
    _check_positive("max_steps", max_steps, int)
    _check_positive("timeout", timeout, (int, float))
    _check_positive("workers_per_trial", workers_per_trial, int)
    validate_space(fn, search_space)
    search = OptunaSearch(
        search_space,
        trials=trials,
        mode=mode,
        metric=metric,
        sampler=sampler,
        pruner=pruner,
        max_steps=max_steps,
        seed=seed,
        unlimited=timeout is not None,
    )

    client = get_client(cluster)
    exp = Experiment(
        "hpo",
        name or fn.__name__,
        metric,
        mode,
        search_space,
        total=search.total,
        dashboard_link=_dashboard_link(client),
        max_steps=max_steps,
        timeout=timeout,
    )
    if workers_per_trial == 1:
        return run_experiment(exp, fn, search, client, parallel=parallel, progress=progress)
    from .ddp import DataParallelTrial

    trial_fn = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
    return run_experiment(
        exp, trial_fn, search, client, parallel=parallel, progress=progress, ranks=workers_per_trial
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
    **kwargs_for_train: Any,
):
    """Run ``fn(**kwargs_for_train)`` data-parallel: one rank per Dask worker, ``workers`` ranks, joined in a
    torch.distributed process group; return the DataParallelExperiment (``.result`` is rank 0's return value).

    Inside ``fn``, ``model, optimizer, loader = jupyter_dist.prepare(model, optimizer, loader)`` moves the model
    to the rank's device and wraps it in DistributedDataParallel, and shards the DataLoader; ``report()`` from
    rank 0 streams live (other ranks' reports are dropped: only their stop signal counts).

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
    """
    from .ddp import BACKENDS, DataParallelExperiment, DataParallelTrial

    _check_callable(fn)
    _check_progress(progress)
    _check_positive("workers", workers, int)
    _check_positive("timeout", timeout, (int, float))
    _check_positive("threads_per_rank", threads_per_rank, int)
    _check_positive("rendezvous_timeout", rendezvous_timeout, (int, float))
    if (
        isinstance(gpus_per_worker, bool)
        or not isinstance(gpus_per_worker, (int, float))
        or gpus_per_worker < 0
    ):
        raise ValueError(f"gpus_per_worker={gpus_per_worker!r}: give 0 (CPU) or the GPUs each rank needs")
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use 'gloo', 'nccl', or None (NCCL with GPUs, gloo without)")
    if backend == "nccl" and not gpus_per_worker:
        raise ValueError("backend='nccl' runs on GPUs: give gpus_per_worker=1 (or more)")
    if metric is not None and (not isinstance(metric, str) or not metric):
        raise ValueError(f"metric={metric!r}: give the name of a metric rank 0 reports, or None")
    validate_space(fn, kwargs_for_train)
    _check_kernel_cuda()

    client = get_client(cluster)
    exp = DataParallelExperiment(
        name or fn.__name__, metric, workers, dashboard_link=_dashboard_link(client), timeout=timeout
    )
    trial_fn = DataParallelTrial(
        fn,
        backend=backend,
        gpus_per_worker=gpus_per_worker,
        threads=threads_per_rank,
        rendezvous_timeout=rendezvous_timeout,
    )
    source = _OneRun(kwargs_for_train)
    resources = {"GPU": gpus_per_worker} if gpus_per_worker else None
    return run_experiment(
        exp, trial_fn, source, client, parallel=1, progress=progress, ranks=workers, resources=resources
    )


class _OneRun:
    """The trial source of a data-parallel run: one trial, the function's arguments as given."""

    prunes = False

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs = kwargs
        self.given = False

    def next_trial(self) -> tuple[int, dict[str, Any]] | None:
        if self.given:
            return None
        self.given = True
        return 0, dict(self.kwargs)

    def report(self, trial_id: int, batch: list) -> bool:
        return False

    def tell(self, record) -> None:
        pass


def _check_kernel_cuda() -> None:
    """Accelerate's most common notebook failure is CUDA initialised in the kernel before it forks the ranks.
    Our ranks are Dask worker processes, spawned, not forked, so it cannot happen, unless Dask is configured
    to fork its workers: then refuse before anything starts."""
    import sys

    import dask

    torch = sys.modules.get("torch")
    forks = dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork"
    if forks and torch is not None and torch.cuda.is_initialized():
        raise RuntimeError(
            "CUDA is initialised in this kernel and Dask is configured to fork its worker processes "
            "(distributed.worker.multiprocessing-method: fork): forked workers cannot use CUDA. Use the default "
            "'spawn', or restart the kernel without touching CUDA before the run"
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
    cluster, name, parallel, timeout, progress
        As for ``hpo()``.
    """
    from .ablation import AblationExperiment, AblationSource, AblationTrial, plan_study

    _check_common("ablation", fn, metric, mode, parallel, progress)
    _check_positive("timeout", timeout, (int, float))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r}: give an int")
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
    client = get_client(cluster)
    exp = AblationExperiment(
        plan,
        name or fn.__name__,
        metric,
        mode,
        dashboard_link=_dashboard_link(client),
        timeout=timeout,
    )
    trial_fn = AblationTrial(fn, plan.modules, plan.removed_modules())
    return run_experiment(exp, trial_fn, AblationSource(plan), client, parallel=parallel, progress=progress)


def run_experiment(
    exp: Experiment,
    fn: Callable,
    source,
    client,
    *,
    parallel: int | None,
    progress: Any,
    ranks: int | None = None,
    resources: dict[str, float] | None = None,
) -> Experiment:
    """Run ``source``'s trials of ``fn`` on ``client``'s cluster, recording into ``exp`` and showing a view.

    ``ranks``: every trial is a data-parallel job of that many rank tasks, on workers having ``resources``."""
    scheduler = TrialScheduler(client, fn, exp.id, parallel=parallel or 1, ranks=ranks, resources=resources)
    if ranks is not None:
        fits = scheduler.check_placement()  # too few workers: say so before anything starts
        scheduler.parallel = min(parallel or fits, fits)
    else:
        scheduler.parallel = parallel or max(1, worker_threads(client))
    scheduler.check_function()
    exp._stop = scheduler.request_stop
    view = make_view(progress, exp)
    # From the moment the view shows, Ctrl-C means "stop gracefully", even before the first trial starts.
    with scheduler.interrupts_stop():
        return _run_with_view(exp, scheduler, source, view)


def _run_with_view(exp: Experiment, scheduler: TrialScheduler, source, view) -> Experiment:
    view.start()
    try:
        try:
            scheduler.run(source, exp, idle=view.idle, timeout=exp.timeout)
        except MetricError as exc:
            exp.state, exp.error = "failed", str(exc)
            raise ExperimentFailed(str(exc), exp) from None
        except BaseException as exc:
            exp.state, exp.error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        counts = exp.counts()
        every_trial_failed = counts["failed"] and not (counts["completed"] or counts["pruned"])
        if every_trial_failed:
            first = next(r for r in exp.trial_records() if r.state == "failed")
            exp.state, exp.error = "failed", first.error
        else:
            # Time running out is a planned end; a stop (button, interrupt, exp.stop()) is not.
            exp.state = "stopped" if scheduler.stopping and not scheduler.timed_out else "completed"
    finally:
        exp.ended = time.time()
        view.finish()
    if every_trial_failed:
        raise ExperimentFailed(
            f"every trial failed; the first (trial {first.trial_id}) with:\n{first.error}", exp
        )
    return exp


class _Silent:
    def start(self) -> None: ...

    def idle(self) -> None: ...

    def finish(self) -> None: ...


def make_view(progress: Any, exp: Experiment):
    """The view that shows ``exp`` while it runs (see ``hpo(progress=...)``)."""
    if progress is False or progress is None:
        return _Silent()
    if callable(progress):
        return progress(exp)
    from .widgets import view_for

    return view_for(exp, progress)


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"the training function must be callable, got {type(fn).__name__} {fn!r:.60}")


def _check_common(what: str, fn: Any, metric: Any, mode: Any, parallel: Any, progress: Any) -> None:
    _check_callable(fn)
    if not isinstance(metric, str) or not metric:
        raise ValueError(
            f"{what}() needs metric=..., the name of the metric to {'optimise' if what == 'hpo' else 'compare'}: "
            "one that the training function reports with jupyter_dist.report(...) or returns"
        )
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: use 'max' or 'min'")
    _check_parallel(parallel)
    _check_progress(progress)


def _check_parallel(parallel: Any) -> None:
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
        raise ValueError(f"parallel={parallel!r}: give a positive number of trials to run at once, or None")


def _check_positive(name: str, value: Any, kind) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind) or value <= 0):
        raise ValueError(f"{name}={value!r}: give a positive number, or None")


def _check_progress(progress: Any) -> None:
    from .widgets import PROGRESS

    if isinstance(progress, str) and progress not in PROGRESS:
        raise ValueError(f"progress={progress!r}: use one of {', '.join(PROGRESS)}, False, or a callable")


def _dashboard_link(client) -> str | None:
    try:
        return client.dashboard_link
    except Exception:  # a scheduler without a dashboard (no bokeh) has no link to show
        return None
