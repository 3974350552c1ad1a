"""Running an experiment, once for every kind: check the options, let the kind say what to run (and how to
continue a stored run), resolve the cluster, check the function and the placement before anything starts, record
into a fresh record, show a view, run the trial loop, and settle the final state.

The API's entry points (api.py) and the magic only name the kind and pass its arguments; this does the rest.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from ._callbacks import CallbackHooks
from ._control import RunControl, as_resumed
from ._imported import imported_apart
from ._stored import prior_run
from ._tracebacks import in_user_terms
from ._validate import check_callable
from ._version import run_versions
from .checkpoints import checkpoint_plan, checkpoint_settings
from .cluster import (
    WorkersHeld,
    check_kernel_cuda,
    dashboard_link,
    fit_gpu_workers,
    get_client,
    hold_workers,
)
from .errors import ClusterLost, ExperimentFailed, HookFailed, MetricError
from .experiment import Experiment, Extension, OneTrial, runs_extensions, source_hash, source_of
from .kinds import Kind, RunOptions, TrialPlan, experiment_of, kind_of
from .protocol import ExperimentState, TrialState, draw_seed
from .store import ExperimentRecord, InMemoryRecord, Journal, store_path
from .trials import DaskLauncher, StopSignal, TrialLoop, interrupts_stop, quiet_collector


def run_kind(kind: Kind | str, fn: Callable, options: RunOptions, args: Any) -> Experiment:
    """Run ``fn`` as an experiment of ``kind`` (a registered Kind, or its name) with the kind's own arguments
    (``args``: its ``Kind.arguments`` dataclass), and return the finished Experiment. Every argument is checked
    before any work starts."""
    # Optuna is imported apart, before the run's frames exist for it to keep (_imported.imported_apart).
    imported_apart("optuna")
    kind = kind if isinstance(kind, Kind) else kind_of(kind)
    check_callable(fn)
    options.check()
    check_kernel_cuda(options.cluster)
    store = store_path(options.store)
    prior = None
    if options.resume:
        prior = prior_run(store, options.name, kind.name)
        # What the call leaves out is what the stored run had: its control, and how its trials used the cluster.
        options = as_resumed(options, prior).resumed(prior.definition.details)
    args = _seeded(args, prior)
    plan = kind.plan(fn, options, args)
    if prior is not None:
        plan = kind.resume(prior, plan, options)
    control = RunControl.of(options, plan.definition.objective, plan.source)
    details = {
        **plan.definition.details,
        "checkpoints": checkpoint_settings(options.checkpoint_dir, options.keep_checkpoints, store),
        **options.runtime_details(),
    }
    definition = control.applied(dataclasses.replace(plan.definition, details=details))
    plan = dataclasses.replace(plan, definition=definition)
    return run_experiment(plan, options, store, prior, control)


def _seeded(args: Any, prior: InMemoryRecord | None) -> Any:
    """A kind's arguments with a seed: a kind that takes ``seed=`` and was given none draws one, or, continuing a
    stored run, goes on with that run's. It seeds the search and every trial, and is recorded (exp.seed)."""
    if not any(f.name == "seed" for f in dataclasses.fields(args)) or args.seed is not None:
        return args
    stored = prior.definition.details.get("seed") if prior is not None else None
    return dataclasses.replace(args, seed=draw_seed() if stored is None else stored)


def run_experiment(
    plan: TrialPlan,
    options: RunOptions,
    store: str | None = None,
    prior: InMemoryRecord | None = None,
    control: RunControl | None = None,
) -> Experiment:
    """Run ``plan``'s trials and return the finished Experiment (its kind's class).

    ``store``: the store file the run is recorded in as it goes (None: memory only); its name there is the
    definition's, or, with no ``options.name`` given, the first free one of name-2, name-3...
    ``prior``: the stored run this one continues (its record, read back), under the same id and name.
    ``control``: its callbacks, stop rule and target (None: none).
    """
    definition, source = plan.definition, plan.source
    control = control or RunControl(scope=definition.objective.scope)
    # The cell shows something from its first instant: starting a cluster takes seconds.
    preamble = _make_preamble(options.progress, stored=store is not None)
    launcher: DaskLauncher | None = None  # typed: mypy checks it against the loop's TrialLauncher seam
    held = WorkersHeld()  # what the run asked the cluster to keep, given back however the run ends
    try:
        if preamble:
            preamble.phase("connecting to the Dask cluster…")
        # The most workers this run can use: it sizes a gateway cluster nobody sized (adaptive up to that).
        wanted = (options.parallel or 1) * plan.ranks if plan.ranks else options.parallel
        client = get_client(options.cluster, workers_wanted=wanted, workers_at_once=plan.ranks)
        if options.gpus:
            # The embedded cluster on a GPU machine packs trials of a share of a GPU into processes of their own.
            fit_gpu_workers(client, options.gpus)
        if plan.ranks:
            if preamble:
                preamble.phase("asking the cluster for the ranks' workers…")
            held = _hold_ranks(client, plan, options.parallel)
        definition = dataclasses.replace(definition, dashboard_link=dashboard_link(client))
        checkpoints = checkpoint_plan(definition.details, definition.id)
        if checkpoints is not None and hasattr(source, "use_checkpoints"):
            # A source that copies checkpoints between trials (population-based training) needs to know where.
            source.use_checkpoints(checkpoints)
        launcher = DaskLauncher(
            client,
            plan.fn,
            definition.id,
            ranks=plan.ranks,
            resources=options.resources,
            checkpoints=checkpoints,
            # a stop rule decides on reports too: late, a trial at its goal would train on
            decides_on_reports=source.prunes or control.stop_rule is not None,
            max_failures=options.max_failures or 0,
            cpus=options.cpus_per_trial,
            elastic=plan.elastic,
            gpu_types=options.gpu_types,
        )
        parallel, follow = options.parallel, None
        if plan.ranks:
            # Too few workers for one data-parallel trial: said before anything starts.
            fits = launcher.capacity()
            parallel = min(parallel or fits, fits)
        else:
            # One scheduler round trip, also when parallel is given: trials needing resources no worker declares
            # are refused here. With no number given they follow the cluster as it grows or shrinks (an adaptive
            # one is filled to its maximum: the queued trials are what makes it grow).
            fits = launcher.capacity_to_fill()
            if parallel is None:
                parallel, follow = fits, launcher.capacity_to_fill
        if preamble:
            preamble.phase("checking the function on a worker…")
        launcher.check_function()
        if prior is not None:
            launcher.forget_stops()
    except BaseException:
        if preamble:
            preamble.clear()  # the error is what the cell shows
        if launcher is not None:
            launcher.release()
        held.release()
        raise

    # What the run put on the cluster leaves it however the run ends, also before its trial loop starts.
    try:
        journal = None
        about = _about(plan.fn, client, parallel)
        if store is not None:
            journal = Journal(
                store, definition, about, name_given=options.name is not None, resume=prior is not None
            )
            definition = journal.definition
        record = (
            InMemoryRecord(definition, journal) if prior is None else prior.continued(definition, journal)
        )
        stop = StopSignal()
        if journal:
            journal.on_stop_requested = stop.request  # the lab extension's Stop button, through the store
        exp = experiment_of(record, stop.request, source)
        # what exp.reproduce runs (the user's function: a kind's wrapper is the kind's to add), and compares with
        exp._function, exp._about, exp._store = getattr(plan.fn, "fn", plan.fn), about, store
        watcher = control.hooks(exp, source)
        launcher.on_retry = functools.partial(_retried, record, watcher)
        launcher.on_regroup = record.trial_regrouped
        view = _make_view(options.progress, exp, preamble)
        loop = TrialLoop(
            launcher,
            source,
            record,
            definition.objective,
            parallel=parallel,
            follow=follow,
            stop=stop,
            timeout=definition.timeout,
            watcher=watcher,
            stop_rule=control.stop_rule,
            target=control.target,
            constraints=control.constraints,
        )
        # From the moment the view shows, Ctrl-C means "stop gracefully", even before the first trial starts.
        # (and the kernel's garbage collector, scanning what the run accumulates, does not stall the reports)
        with interrupts_stop(stop), quiet_collector():
            try:
                view.start()
                _run(loop, record, exp, view, watcher)
            finally:
                # the view failed: the store must not say "running"
                if record.state is ExperimentState.RUNNING:
                    record.finish(ExperimentState.FAILED, "the run ended before its trial loop did")
                view.finish()
    finally:
        launcher.release()
        held.release()
    return exp


def _hold_ranks(client, plan: TrialPlan, parallel: int | None) -> WorkersHeld:
    """Have the cluster keep the workers the run's data-parallel trials start together for the run (an elastic
    job's up to its maximum, to grow onto), and wait for the first trial's."""
    assert plan.ranks  # a data-parallel run
    elastic = plan.elastic
    if elastic is None:
        fewest, widest, ranks = plan.ranks, plan.ranks, f"{plan.ranks} ranks"
    else:
        fewest, widest = elastic.min_ranks, elastic.max_ranks
        ranks = f"{plan.ranks} ranks, elastic from {fewest} to {widest}"
    return hold_workers(client, fewest=fewest, start=plan.ranks, most=(parallel or 1) * widest, ranks=ranks)


@runs_extensions
def extend_trial(exp: Experiment, extension: Extension, *, cluster: Any, progress: Any) -> None:
    """Run ``exp.extend``'s one trial (``extension``, checked) under the experiment's own id, name and store, as a
    resumed run: its record goes on (the user's ``exp`` shows it), its control and cluster settings are the
    stored ones."""
    prior = exp.record
    assert isinstance(prior, InMemoryRecord)  # what a run and load() hold
    options = as_resumed(RunOptions(cluster=cluster, progress=progress, name=exp.name), prior)
    options = options.resumed(prior.definition.details)
    options.check()
    source = OneTrial(extension.spec)
    # No time limit: the trial trains to its steps (a search's timeout= was for the search).
    definition = dataclasses.replace(prior.definition, timeout=None)
    control = RunControl.of(options, definition.objective, source)
    plan = TrialPlan(control.applied(definition), extension.fn, source)
    ran = run_experiment(plan, options, exp._store, prior, control)
    exp._about = ran._about


def _retried(record: InMemoryRecord, watcher, outcome, why: str) -> None:
    """An attempt raised and its trial runs again: its traceback stays in the trial's output, and the callbacks
    hear of it."""
    record.trial_retried(outcome, why)
    if watcher is not None:
        watcher.trial_retried(outcome.trial_id, in_user_terms(outcome.error))


def _run(loop: TrialLoop, record: InMemoryRecord, exp: Experiment, view, hooks: CallbackHooks | None) -> None:
    """Run the loop; ``hooks``: the run's callbacks, the loop's watcher."""
    try:
        if hooks is not None:
            hooks.experiment_started()
        state, message, failure = _ending(loop, record, exp, view)
        if hooks is not None:
            # The hook reads the final state; the store is told only after it, as the hook may still fail the run.
            ExperimentRecord.finish(record, state, message)
            hooks.experiment_ended()
    except HookFailed as exc:
        # What was recorded is kept; the run ends failed, naming whose code raised (its traceback is the cause).
        record.finish(ExperimentState.FAILED, str(exc))
        raise ExperimentFailed(f"{exc}; the run was ended (what it recorded is kept)", exp) from exc.__cause__
    record.finish(state, message)
    if failure is not None:
        raise failure


def _ending(loop: TrialLoop, record: InMemoryRecord, exp: Experiment, view):
    """Run the trial loop; how the run ends: its final state, the record's message, and the error to raise."""
    try:
        loop.run(idle=view.idle)
    except HookFailed:
        raise
    except ClusterLost as exc:
        return ExperimentState.INTERRUPTED, str(exc), ExperimentFailed(str(exc), exp)
    except MetricError as exc:
        return ExperimentState.FAILED, str(exc), ExperimentFailed(str(exc), exp)
    except BaseException as exc:
        record.finish(ExperimentState.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    counts = record.counts()
    if counts["failed"] and not (counts["completed"] or counts["pruned"]):
        first = next(r for r in record.trial_records() if r.state is TrialState.FAILED)
        failed = ExperimentFailed(
            f"every trial failed; the first (trial {first.trial_id}) with:\n{first.error}", exp
        )
        return ExperimentState.FAILED, first.error, failed
    if loop.target_reached is not None:  # a planned end, which the record says
        return ExperimentState.COMPLETED, loop.target_reached, None
    # Time running out is a planned end; a stop (button, interrupt, exp.stop()) is not.
    stopped = loop.stop.requested and not loop.stop.timed_out
    return (ExperimentState.STOPPED if stopped else ExperimentState.COMPLETED), None, None


class _Silent:
    def start(self) -> None: ...

    def idle(self) -> None: ...

    def finish(self) -> None: ...


def _make_preamble(progress: Any, stored: bool):
    """What the cell shows while the run starts, for the views that draw in the cell (None for the others)."""
    if progress is False or progress is None or callable(progress):
        return None
    from .widgets import preamble_for

    return preamble_for(progress, stored)


def _make_view(progress: Any, exp: Experiment, preamble=None):
    """The view that shows ``exp`` while it runs (see ``hpo(progress=...)``)."""
    if progress is False or progress is None:
        return _Silent()
    if callable(progress):
        return progress(exp)
    from .widgets import view_for  # ipywidgets and plotly only when a view is asked for

    return view_for(exp, progress, preamble)


def _about(fn: Callable, client, parallel: int) -> dict[str, Any]:
    """What the store keeps beside the definition, so a stored run says what ran where (and ``exp.reproduce``
    what has changed since)."""
    user_fn = getattr(fn, "fn", fn)  # the trial wrappers (ablation, data-parallel) keep the user's as .fn
    return {
        "function": getattr(user_fn, "__qualname__", repr(user_fn)),
        "source": source_of(user_fn),
        "source_sha256": source_hash(user_fn),
        "versions": dict(run_versions()),
        "cluster": getattr(client.scheduler, "address", None),
        "parallel": parallel,
    }
