"""The Python API: ``hpo()``, ``pbt()``, ``ablation()`` and ``data_parallel()`` turn a plain training function
into an experiment on Dask.

Each entry point only sorts its arguments into the options every kind shares (``RunOptions``) and its kind's own;
the kind (jupyter_dist/kinds/) checks them before any work starts and says what to run, and
_orchestrate.run_kind does the rest, the same way for every kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._orchestrate import run_kind
from ._stored import experiments, load
from .cluster import cluster_info, use_cluster
from .experiment import Experiment
from .kinds import RunOptions
from .protocol import ExperimentKind
from .search import DEFAULT_PRUNER

__all__ = ["ablation", "cluster_info", "data_parallel", "experiments", "hpo", "load", "pbt", "use_cluster"]


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
    gpus_per_trial: int | None = None,
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
    constraints: Callable[[dict[str, float]], Any] | None = None,
) -> Experiment:
    """Run ``fn`` as asynchronous hyperparameter-optimisation trials on Dask and return the Experiment.

    Parameters
    ----------
    fn
        The training function. Searched arguments are passed by keyword; it reports with
        ``jupyter_dist.report(...)`` and returns a number, a dict of metrics, or None.
    search_space
        ``{argument: space.uniform(...) | space.loguniform(...) | space.integer(...) | space.choice([...])}``;
        plain values are constants passed to every trial. Or a function ``space(trial)`` taking an
        ``optuna.Trial`` (Optuna's define-by-run idiom, for conditional parameters): it calls
        ``trial.suggest_*``, only where its branch needs them, and may return a dict of further arguments;
        each trial gets exactly what it suggested plus that dict (a parameter not suggested is absent, so its
        default applies). It is run on a throwaway study before any work starts.
    trials
        How many trials to run (with ``sampler="grid"``: at most the grid's size; None means the whole grid,
        or, with ``timeout``, as many as fit in the time).
    metric, mode
        The objective's name and whether to maximise ("max") or minimise ("min") it. Several objectives: lists,
        one mode each (``metric=["val_acc", "latency_ms"], mode=["max", "min"]``): Optuna's multi-objective
        samplers search them, ``exp.pareto`` is the front of non-dominated trials, and ``exp.best`` is refused
        (there is no one best). Each trial's value of each objective is what it returned, else its last report.
    sampler
        "tpe", "random", "grid", "gp", "cmaes", "nsga2", "nsga3", or an ``optuna.samplers.BaseSampler`` instance
        (several objectives: any but "cmaes").
    pruner
        Early stopping of running trials: "asha" (the default), "median", "hyperband", an
        ``optuna.pruners.BasePruner`` instance, or None (every trial runs to its end). Decided in the kernel from
        the streamed reports of ``metric``; the trial's next ``report()`` raises ``TrialPruned``. Several
        objectives: "pareto" (the default then: successive halving on the non-dominated rank, where Optuna
        cannot prune) or None; a single-objective pruner is refused.
    constraints
        A function of a completed trial's metrics (``{name: value}``: its last reports and what it returned)
        giving a number per constraint, each <= 0 when it holds, e.g. ``lambda m: [m["latency_ms"] - 20]``
        (set on each trial as Optuna 5's ``Trial.set_constraint``): the samplers "tpe", "gp", "nsga2" and "nsga3"
        prefer trials that meet them, and ``exp.pareto`` lists only those. A resumed run needs it given again.
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
    min_workers_per_trial, max_workers_per_trial, elastic_timeout
        Make those jobs elastic, as ``data_parallel(min_workers=, max_workers=, elastic_timeout=)`` does: a trial
        that loses a rank's worker goes on from its newest checkpoint with the ranks left, and grows onto free
        workers at its next checkpoint.
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
    enqueue
        Known configurations to run first, in order, e.g. ``[{"lr": 1e-3, "layers": 2}, {"lr": 3e-4}]``
        (Optuna's ``study.enqueue_trial``, Ray Tune's ``points_to_evaluate``). A partial one has the rest
        sampled; each counts towards ``trials`` and is told to the sampler as its own trial; its trial carries
        the configuration as the label ``enqueued``. Unknown names and values outside their space are refused
        before any work starts; a resumed run skips the configurations that already ran.
    callbacks
        ``jupyter_dist.Callback`` instances whose hooks (``on_experiment_start``, ``on_trial_start``,
        ``on_trial_report``, ``on_trial_end``, ``on_experiment_end``) run in the kernel as the run goes, in order.
        A hook that raises fails the run (``ExperimentFailed`` naming the callback and the hook); a hook may call
        ``exp.stop()``. A plain function is an Optuna callback, ``f(study, frozen_trial)`` (what
        ``Study.optimize(callbacks=...)`` takes, e.g. optuna-integration's ``MLflowCallback``), called as each
        trial ends with the search's study and the trial as Optuna was told it.
    stop
        A trial's goal, checked in the kernel on each of its reports: ``{metric: threshold}`` (any one metric
        reaching its threshold) or a function ``(trial_id, metrics) -> bool``. A trial meeting it is told to stop
        (its next ``report()`` raises ``TrialPruned``) and ends ``completed``, valued as a completed trial is. A
        threshold is reached at ``metric >= threshold`` (as Ray Tune compares), except ``metric``'s own with
        ``mode="min"``, reached at ``<=``.
    target
        The objective's value that ends the experiment: once a completed trial's value reaches it (``>=`` with
        mode "max", ``<=`` with "min"), no trial starts, the running ones are stopped (``stopped``), and the
        experiment ends ``completed``, its ``exp.message`` naming the trial that reached it.
    objective_scope
        Which of a trial's reports of ``metric`` make its value: "last" (the default: the returned value, else
        the last report), "max", "min", "avg", "last-5-avg" or "last-10-avg", over the reports of its current
        attempt (a returned value counts as its final report). The pruner is given the same: at step n, the scope
        over the reports up to n. ``resume=True`` keeps the stored run's scope, target and stop thresholds
        unless given (callbacks and a stop function must be given again).
    max_failures
        A trial whose function raises runs again, on the cluster, as the next attempt of the same trial, up to
        this many more times (default 0; Ray Tune's ``FailureConfig(max_failures=)``): ``restore()`` finds its
        checkpoints, ``exp.history`` tells its attempts apart, the failed attempt's traceback stays in the
        trial's stderr, and only its final outcome is told to the sampler. A setup error, a bad return value, a
        missing metric, a pruned or stopped trial never run again. A resumed run keeps its stored value.
    cpus_per_trial
        Cores each trial uses: torch's intra-op threads in the trial (the worker's own setting is back after
        it). On workers that declare a Dask ``CPU`` resource each trial asks for that many ``CPU``; elsewhere a
        worker's cores are its threads, and ``parallel`` defaults to the cluster's threads // cpus_per_trial
        (2 one-thread workers, cpus_per_trial=2: one trial at a time).
    resources
        Dask worker resources each trial needs, ``{"MEM": 4e9}`` (``dask worker --resources MEM=16e9``): trials
        run only where they fit, and ``parallel`` defaults to how many fit; refused before any work starts when
        no worker declares enough. ``"GPU"`` here is ``gpus_per_trial``. A resumed run keeps its stored value.
    """
    options = RunOptions(
        cluster=cluster,
        parallel=parallel,
        progress=progress,
        store=store,
        resume=resume,
        name=name,
        timeout=timeout,
        gpus=gpus_per_trial,
        checkpoint_dir=checkpoint_dir,
        keep_checkpoints=keep_checkpoints,
        callbacks=callbacks,
        stop=stop,
        target=target,
        objective_scope=objective_scope,
        max_failures=max_failures,
        cpus_per_trial=cpus_per_trial,
        worker_resources=resources,
        constraints=constraints,
    )
    return run_kind(
        ExperimentKind.HPO,
        fn,
        options,
        search_space=search_space,
        trials=trials,
        metric=metric,
        mode=mode,
        sampler=sampler,
        pruner=pruner,
        seed=seed,
        max_steps=max_steps,
        workers_per_trial=workers_per_trial,
        enqueue=enqueue,
        min_workers_per_trial=min_workers_per_trial,
        max_workers_per_trial=max_workers_per_trial,
        elastic_timeout=elastic_timeout,
    )


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
    gpus_per_trial: int | None = None,
    checkpoint_dir: Any = None,
    keep_checkpoints: int = 2,
    callbacks: list | None = None,
    target: float | None = None,
    max_failures: int | None = None,
    cpus_per_trial: int | None = None,
    resources: dict[str, float] | None = None,
) -> Experiment:
    """Run ``fn`` as population-based training (Jaderberg et al. 2017) on Dask and return the
    PopulationExperiment: ``population`` members train at once, and every ``perturbation_interval`` steps a
    member in the bottom ``quantile`` goes on from a top member's newest checkpoint with that member's
    hyperparameters perturbed, so the hyperparameters become schedules found while training.

    ``fn`` is an ordinary training function that reports each step and saves and loads its state with
    ``jupyter_dist.checkpoint(step, state)`` / ``jupyter_dist.restore(state)`` (a function that never calls them
    is refused before anything runs): each member runs in segments, one trial each, that end at the segment's
    last checkpoint; as each ends its member's next segment is decided, without waiting for the others.

    Parameters
    ----------
    search_space
        ``{argument: space object or constant}``: the members' starting hyperparameters are sampled from it, and
        (unless ``mutations`` says otherwise) every searched argument is perturbed within its space.
    population
        Members (at least 2). With fewer worker slots than members, the member furthest behind runs next.
    metric, mode
        The objective members are ranked by (their newest value of it).
    perturbation_interval
        Steps between a member's decisions: a segment ends at its first checkpoint of step k * interval - 1
        (steps counted from 0, as ``report()`` numbers them) or later.
    quantile
        The fraction of members (by rank) that copy (the bottom) and are copied (the top), 0 < quantile <= 0.5.
    resample_probability
        The chance that explore draws a value afresh from its space instead of perturbing it (×0.8 or ×1.2 for
        numbers, a neighbouring option for a ``choice``).
    max_steps
        The steps each member trains (required): a member ends once it has checkpointed step max_steps - 1.
    mutations
        ``{argument: space object, list of options, or function returning a new value}``: what to perturb, and
        within what; default: every searched argument of ``search_space``.
    seed
        Seeds the starting points, the choice of donors and the perturbations.
    workers_per_trial
        k > 1 makes every member a k-rank data-parallel job (``prepare()`` inside the function).
    keep_checkpoints
        Checkpoints each member keeps (the newest); a member that copies another removes its own branch's.
    resume
        Go on with the stored population ``name``: each member from its newest checkpoint, with its newest
        hyperparameters.
    cluster, parallel, name, timeout, progress, store, gpus_per_trial, checkpoint_dir, callbacks
        As for ``hpo()``.
    target, max_failures, cpus_per_trial, resources
        As for ``hpo()``.
    """
    options = RunOptions(
        cluster=cluster,
        parallel=parallel,
        progress=progress,
        store=store,
        resume=resume,
        name=name,
        timeout=timeout,
        gpus=gpus_per_trial,
        checkpoint_dir=checkpoint_dir,
        keep_checkpoints=keep_checkpoints,
        callbacks=callbacks,
        target=target,
        max_failures=max_failures,
        cpus_per_trial=cpus_per_trial,
        worker_resources=resources,
    )
    return run_kind(
        ExperimentKind.PBT,
        fn,
        options,
        search_space=search_space,
        population=population,
        metric=metric,
        mode=mode,
        perturbation_interval=perturbation_interval,
        quantile=quantile,
        resample_probability=resample_probability,
        max_steps=max_steps,
        mutations=mutations,
        seed=seed,
        workers_per_trial=workers_per_trial,
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
    callbacks, stop
        As for ``hpo()``: the run is one trial, and rank 0's reports are what the callbacks hear and the stop rule
        judges (``metric`` with no mode: every threshold is reached at ``>=``).
    resources
        Dask worker resources each rank needs, ``{"MEM": 4e9}``, as for ``hpo()`` (``"GPU"`` here is
        ``gpus_per_worker``). A failing rank is not retried (there is no ``max_failures``): re-run the job with
        ``resume=True``, and ``restore()`` goes on from its checkpoint.
    min_workers, max_workers, elastic_timeout
        Make the job elastic (either bound given; the other defaults to ``workers``). When a rank's worker dies,
        is retired or is cut off, the job starts again by itself from its newest checkpoint on the workers it still
        has (at least ``min_workers``); when workers are free it grows, up to ``max_workers``, at its next
        checkpoint. ``jupyter_dist.world_size()`` and the prepared DataLoader follow the new size (the loader goes
        on from its place in the epoch). A job below ``min_workers`` for ``elastic_timeout`` seconds (default
        300) ends, naming its newest checkpoint. Needs ``checkpoint()``/``restore()`` in ``fn``; every regroup is
        recorded (``exp.restarts``).
    """
    options = RunOptions(
        cluster=cluster,
        parallel=1,
        progress=progress,
        store=store,
        resume=resume,
        name=name,
        timeout=timeout,
        gpus=gpus_per_worker,
        checkpoint_dir=checkpoint_dir,
        keep_checkpoints=keep_checkpoints,
        callbacks=callbacks,
        stop=stop,
        worker_resources=resources,
    )
    return run_kind(
        ExperimentKind.DDP,
        fn,
        options,
        workers=workers,
        backend=backend,
        metric=metric,
        threads_per_rank=threads_per_rank,
        rendezvous_timeout=rendezvous_timeout,
        strategy=strategy,
        mixed_precision=mixed_precision,
        min_workers=min_workers,
        max_workers=max_workers,
        elastic_timeout=elastic_timeout,
        kwargs_for_train=kwargs_for_train,
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
    callbacks: list | None = None,
    objective_scope: str | None = None,
    max_failures: int | None = None,
    cpus_per_trial: int | None = None,
    resources: dict[str, float] | None = None,
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
    callbacks, objective_scope
        As for ``hpo()``: the scope makes each trial's value, which the summary compares. (No ``stop=`` or
        ``target=``: variants compare only when each runs to its end.)
    max_failures, cpus_per_trial, resources
        As for ``hpo()``.
    """
    options = RunOptions(
        cluster=cluster,
        parallel=parallel,
        progress=progress,
        store=store,
        resume=resume,
        name=name,
        timeout=timeout,
        gpus=gpus_per_trial,
        checkpoint_dir=checkpoint_dir,
        keep_checkpoints=keep_checkpoints,
        callbacks=callbacks,
        objective_scope=objective_scope,
        max_failures=max_failures,
        cpus_per_trial=cpus_per_trial,
        worker_resources=resources,
    )
    return run_kind(
        ExperimentKind.ABLATION,
        fn,
        options,
        features=features,
        modules=modules,
        flags=flags,
        groups=groups,
        metric=metric,
        mode=mode,
        repeats=repeats,
        params=params,
        seed=seed,
    )
