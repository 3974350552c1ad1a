"""Running an experiment, once for every kind: check the options, let the kind say what to run (and how to
continue a stored run), resolve the cluster, check the function and the placement before anything starts, record
into a fresh record, show a view, run the trial loop, and settle the final state.

The API's entry points (api.py) and the magic only name the kind and pass its arguments; this does the rest.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Callable
from typing import Any

from ._stored import prior_run
from ._validate import check_callable
from .checkpoints import checkpoint_plan, checkpoint_settings
from .errors import ClusterLost, ExperimentFailed, MetricError
from .experiment import Experiment
from .kinds import Kind, RunOptions, TrialPlan, experiment_of, kind_of
from .protocol import ExperimentState, TrialState
from .runtime import DaskLauncher, StopSignal, TrialLoop, dashboard_link, get_client, interrupts_stop
from .store import InMemoryRecord, Journal, store_path


def run_kind(kind: Kind | str, fn: Callable, options: RunOptions, **arguments: Any) -> Experiment:
    """Run ``fn`` as an experiment of ``kind`` (a registered Kind, or its name) with the kind's own
    ``arguments``, and return the finished Experiment. Every argument is checked before any work starts."""
    kind = kind if isinstance(kind, Kind) else kind_of(kind)
    check_callable(fn)
    options.check()
    store = store_path(options.store)
    plan = kind.plan(fn, options, **arguments)
    prior = None
    if options.resume:
        prior = prior_run(store, options.name, kind.name)
        plan = kind.resume(prior, plan, options)
        options = options.resumed(prior.definition.details)
    details = {
        **plan.definition.details,
        "checkpoints": checkpoint_settings(options.checkpoint_dir, options.keep_checkpoints, store),
        **options.runtime_details(),
    }
    plan = dataclasses.replace(plan, definition=dataclasses.replace(plan.definition, details=details))
    return run_experiment(plan, options, store, prior)


def run_experiment(
    plan: TrialPlan, options: RunOptions, store: str | None = None, prior: InMemoryRecord | None = None
) -> Experiment:
    """Run ``plan``'s trials and return the finished Experiment (its kind's class).

    ``store``: the store file the run is recorded in as it goes (None: memory only); its name there is the
    definition's, or, with no ``options.name`` given, the first free one of name-2, name-3...
    ``prior``: the stored run this one continues (its record, read back), under the same id and name.
    """
    definition, source = plan.definition, plan.source
    # The cell shows something from its first instant: starting a cluster takes seconds.
    preamble = _make_preamble(options.progress, stored=store is not None)
    try:
        if preamble:
            preamble.phase("connecting to the Dask cluster…")
        # The most workers this run can use: it sizes a gateway cluster nobody sized (adaptive up to that).
        wanted = (options.parallel or 1) * plan.ranks if plan.ranks else options.parallel
        client = get_client(options.cluster, workers_wanted=wanted, workers_at_once=plan.ranks)
        definition = dataclasses.replace(definition, dashboard_link=dashboard_link(client))
        checkpoints = checkpoint_plan(definition.details, definition.id)
        launcher = DaskLauncher(
            client,
            plan.fn,
            definition.id,
            ranks=plan.ranks,
            resources=options.resources,
            checkpoints=checkpoints,
            decides_on_reports=source.prunes,
            max_failures=options.max_failures or 0,
            cpus=options.cpus_per_trial,
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
        raise

    journal = None
    if store is not None:
        about = _about(plan.fn, client, parallel)
        journal = Journal(
            store, definition, about, name_given=options.name is not None, resume=prior is not None
        )
        definition = journal.definition
    record = InMemoryRecord(definition, journal) if prior is None else prior.continued(definition, journal)
    stop = StopSignal()
    if journal:
        journal.on_stop_requested = stop.request  # the lab extension's Stop button, through the store
    launcher.on_retry = record.trial_retried  # a retried attempt's traceback stays in the trial's output
    exp = experiment_of(record, stop.request, source)
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
    )
    # From the moment the view shows, Ctrl-C means "stop gracefully", even before the first trial starts.
    with interrupts_stop(stop):
        try:
            view.start()
            _run(loop, record, exp, view)
        finally:
            if record.state is ExperimentState.RUNNING:  # the view failed: the store must not say "running"
                record.finish(ExperimentState.FAILED, "the run ended before its trial loop did")
            view.finish()
    return exp


def _run(loop: TrialLoop, record: InMemoryRecord, exp: Experiment, view) -> None:
    try:
        loop.run(idle=view.idle)
    except ClusterLost as exc:
        record.finish(ExperimentState.INTERRUPTED, str(exc))
        raise ExperimentFailed(str(exc), exp) from None
    except MetricError as exc:
        record.finish(ExperimentState.FAILED, str(exc))
        raise ExperimentFailed(str(exc), exp) from None
    except BaseException as exc:
        record.finish(ExperimentState.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    counts = record.counts()
    if counts["failed"] and not (counts["completed"] or counts["pruned"]):
        first = next(r for r in record.trial_records() if r.state is TrialState.FAILED)
        record.finish(ExperimentState.FAILED, first.error)
        raise ExperimentFailed(
            f"every trial failed; the first (trial {first.trial_id}) with:\n{first.error}", exp
        )
    # Time running out is a planned end; a stop (button, interrupt, exp.stop()) is not.
    stopped = loop.stop.requested and not loop.stop.timed_out
    record.finish(ExperimentState.STOPPED if stopped else ExperimentState.COMPLETED)


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
    """What the store keeps beside the definition, so a stored run says what ran where."""
    import inspect
    from importlib.metadata import PackageNotFoundError, version

    user_fn = getattr(fn, "fn", fn)  # the trial wrappers (ablation, data-parallel) keep the user's as .fn
    try:
        source = inspect.getsource(user_fn)
    except (OSError, TypeError):
        source = None
    versions = {}
    for package in ("jupyter_dist", "torch", "dask", "distributed", "optuna", "python"):
        try:
            versions[package] = platform.python_version() if package == "python" else version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {
        "function": getattr(user_fn, "__qualname__", repr(user_fn)),
        "source": source,
        "versions": versions,
        "cluster": getattr(client.scheduler, "address", None),
        "parallel": parallel,
    }
