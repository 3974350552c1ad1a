"""Running an experiment, once for every kind: resolve the cluster, check the function and the placement before
anything starts, record into a fresh record, show a view, run the trial loop, and settle the final state.

The API's entry points (api.py) only validate their arguments and say what to run; this does the rest.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Callable
from typing import Any

from .checkpoints import checkpoint_plan
from .errors import ClusterLost, ExperimentFailed, MetricError
from .experiment import Experiment
from .protocol import ExperimentState, TrialState
from .runtime import (
    DaskLauncher,
    StopSignal,
    TrialLoop,
    TrialSource,
    dashboard_link,
    get_client,
    interrupts_stop,
)
from .store import ExperimentDefinition, InMemoryRecord, Journal


def run_experiment(
    definition: ExperimentDefinition,
    fn: Callable,
    source: TrialSource,
    *,
    cluster: Any,
    parallel: int | None,
    progress: Any,
    make_experiment: Callable[..., Experiment] = Experiment,
    ranks: int | None = None,
    resources: dict[str, float] | None = None,
    store: str | None = None,
    name_given: bool = False,
    resume: InMemoryRecord | None = None,
) -> Experiment:
    """Run ``source``'s trials of ``fn`` and return the finished Experiment (``make_experiment(record, stop)``).

    ``ranks``: every trial is a data-parallel job of that many rank tasks, on workers having ``resources``.
    ``store``: the store file the run is recorded in as it goes (None: memory only); its name there is
    ``definition.name``, or with ``name_given`` False the first free one of name-2, name-3...
    ``resume``: the stored run this one continues (its record, read back), under the same id and name.
    """
    # The cell shows something from its first instant: starting a cluster takes seconds.
    preamble = _make_preamble(progress, stored=store is not None)
    try:
        if preamble:
            preamble.phase("connecting to the Dask cluster…")
        client = get_client(cluster)
        definition = dataclasses.replace(definition, dashboard_link=dashboard_link(client))
        checkpoints = checkpoint_plan(definition.details, definition.id)
        launcher = DaskLauncher(
            client,
            fn,
            definition.id,
            ranks=ranks,
            resources=resources,
            checkpoints=checkpoints,
            decides_on_reports=source.prunes,
        )
        follow = None
        if ranks:
            fits = (
                launcher.capacity()
            )  # too few workers for one data-parallel trial: said before anything starts
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
        if resume is not None:
            launcher.forget_stops()
    except BaseException:
        if preamble:
            preamble.clear()  # the error is what the cell shows
        raise

    journal = None
    if store is not None:
        about = _about(fn, client, parallel)
        journal = Journal(store, definition, about, name_given=name_given, resume=resume is not None)
        definition = journal.definition
    record = InMemoryRecord(definition, journal) if resume is None else resume.continued(definition, journal)
    stop = StopSignal()
    if journal:
        journal.on_stop_requested = stop.request  # the lab extension's Stop button, through the store
    exp = make_experiment(record, stop.request)
    view = _make_view(progress, exp, preamble)
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
