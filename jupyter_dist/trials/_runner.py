"""The worker side of a trial: load the function, run it with its parameters, say how it ended.

Everything here runs inside a Dask worker process. The outcome is built here, once (``protocol.Outcome``), and
travels both on the event stream and as the task's result.
"""

from __future__ import annotations

import functools
import inspect
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from .._tracebacks import trial_traceback
from ..errors import JupyterDistError, TrialPruned
from ..protocol import ErrorKind, Outcome, TrialState, TrialTask, derive_seed, encode_outcome
from ._allocator import tensor_friendly_allocator
from ._capture import TrialOutput
from ._cpus import torch_threads
from ._devices import holding_gpus, release_gpu_memory
from ._out_of_memory import memory_cause, out_of_memory, release_after_out_of_memory, reset_peaks
from ._outbox import OUTCOME_WAIT, QUEUED_OUTCOME_WAIT
from ._seeding import seeded
from ._trial_context import Regroup, Reporter, SegmentDone, TrialContext, activate
from ._utilization import sampled
from ._worker_cache import KEPT_EXPERIMENTS, load_function


@functools.lru_cache(maxsize=KEPT_EXPERIMENTS)  # inspect.signature at every trial: ~40 us of a brief trial's
def _wants_reporter(fn: Callable) -> bool:
    try:
        return "reporter" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def run_trial(task: TrialTask) -> Outcome:
    """Run one trial attempt on this worker and say how it went.

    Every attempt gets a fresh id: when a worker dies Dask re-runs the task elsewhere, and the kernel must tell
    the second attempt's reports from the first's. A ``task.rank`` makes this one rank of a data-parallel trial:
    its whole return value then comes back too, as ``result`` of the task's Outcome (never on the event stream).
    """
    from distributed import get_worker

    fn = load_function(task.function, task.pickled)
    worker = get_worker()
    rank = task.rank
    attempt = rank.attempt if rank else uuid.uuid4().hex[:12]
    ctx = TrialContext(
        task.exp_id, task.trial_id, attempt, task.topic, worker.log_event, rank, task.report_wait
    )
    ctx.checkpoint_dir, ctx.keep_checkpoints = task.checkpoint_dir, task.keep_checkpoints
    ctx.until_step, ctx.elastic = task.until_step, task.elastic
    kwargs = dict(task.params)
    if _wants_reporter(fn):
        kwargs["reporter"] = Reporter(ctx)

    started = time.time()
    returned, error, kind, state, stopped_at = None, None, None, TrialState.COMPLETED, None
    regroup = False
    with TrialOutput(ctx):
        activate(ctx)
        try:
            if ctx.should_stop:  # queued before the stop, started after it
                raise TrialPruned
            declared = worker.state.total_resources.get("GPU", 0)
            with (
                holding_gpus(task.gpus, declared) as ctx.devices,
                tensor_friendly_allocator(),
                torch_threads(task.cpus),
                seeded(_seed_of(task)),
                sampled(ctx),
            ):
                reset_peaks(ctx.devices)
                returned = fn(**kwargs)
            if ctx.should_stop:
                state = TrialState.PRUNED  # it returned by itself, but after it was told to stop
        except SegmentDone as done:
            # A PBT segment checkpointed its last step: completed, valued by its reports. An elastic job's ranks
            # ending to regroup are the kernel's to start again (the outcome says so).
            regroup = isinstance(done, Regroup)
        except TrialPruned:
            state, stopped_at = TrialState.PRUNED, time.time()
        except (Exception, SystemExit) as exc:  # a failing trial is recorded, never a crashed worker
            state, error = TrialState.FAILED, trial_traceback(exc)
            kind = ErrorKind.SETUP if isinstance(exc, JupyterDistError) else ErrorKind.TRIAL
            ctx.failed_at = ctx.failed_at or time.time()
            short_of = out_of_memory(exc)
            if short_of:  # the cause first, in a line, above the traceback
                kind = ErrorKind.MEMORY
                error = f"{memory_cause(short_of, exc, ctx.devices, task.gpus)}\n{error}"
            # The traceback's frames hold the failed function's locals (after a CUDA out-of-memory error, its
            # model and batches): let go of them now, not whenever the exception is collected.
            traceback.clear_frames(exc.__traceback__)
        finally:
            duration = time.time() - started
            activate(None)
    if kind is ErrorKind.MEMORY:
        release_after_out_of_memory()
    elif ctx.devices:
        release_gpu_memory(failed=state is TrialState.FAILED)

    result = returned
    if state is TrialState.PRUNED and returned is not None:
        # it returned by itself after the stop: a tensor (say) cannot travel, and would take its messages with it
        returned = _plain_result(fn, returned)[0]
    if state is TrialState.COMPLETED:
        returned, error = _plain_result(fn, returned)
        if error and rank is not None:  # a data-parallel job may return anything (a model, a state dict)
            returned, error = None, None
        if error:
            state, kind = TrialState.FAILED, ErrorKind.RESULT
    last = ctx.last
    if state is TrialState.COMPLETED and isinstance(returned, dict):
        # A returned dict's metrics are the attempt's final values of them, as a last report would be: kept with
        # the trial (stored, and in its REST record), not only the objective's.
        last = {**last, **returned}
    outcome = Outcome(
        task.trial_id,
        ctx.attempt,
        state,
        returned=returned,
        last=last,
        steps=ctx.steps,
        started=started,
        duration=duration,
        error=error,
        error_kind=kind,
        worker=worker.address,
        stopped_at=stopped_at,
        failed_at=ctx.failed_at,
        rank=ctx.rank,
        regroup=regroup,
    )
    # The outcome travels on the event stream too, behind the trial's reports and output: the kernel learns of
    # the end a few ms later without a gather round trip, and knows every earlier message has arrived.
    ctx.send(encode_outcome(outcome), _outcome_wait(worker))
    if rank is not None:
        outcome.result = result
    return outcome


def _seed_of(task: TrialTask) -> int | None:
    """The trial's seed; each rank of a data-parallel trial its own, from the trial's and its rank (every rank
    drawing the same numbers would, say, drop out the same units on every rank)."""
    if task.seed is None or task.rank is None:
        return task.seed
    return derive_seed(task.seed, task.rank.rank)


def _outcome_wait(worker) -> float:
    """How long the outcome may wait on this worker for others to travel with it: OUTCOME_WAIT, or, when the worker
    has tasks ready to run (trials queued behind this one: trials/_loop.py BRIEF_TRIAL), QUEUED_OUTCOME_WAIT. Its
    thread goes straight on with the next, so the kernel hearing of the end later costs nothing, and hearing of
    several at once places their successors in one submission."""
    state = getattr(worker, "state", None)
    queued = state is not None and bool(getattr(state, "ready", None) or getattr(state, "constrained", None))
    return QUEUED_OUTCOME_WAIT if queued else OUTCOME_WAIT


def _plain_result(fn: Callable, returned: Any) -> tuple[Any, str | None]:
    """A return value as a float, a dict of floats or None; or an error saying what was wrong with it."""
    if returned is None:
        return None, None
    if isinstance(returned, dict):
        metrics = {}
        for name, value in returned.items():
            try:
                metrics[str(name)] = float(value)
            except (TypeError, ValueError):
                pass  # non-numeric entries (a model, a path) are the user's business, not a metric
        return metrics, None
    try:
        return float(returned), None
    except (TypeError, ValueError):
        name = getattr(fn, "__name__", "the training function")
        return None, (
            f"{name}() returned {type(returned).__name__} {returned!r:.80}; "
            "return a number, a dict of metrics, or None (then the last reported value counts)"
        )
