"""The worker side of a trial: load the function, run it with its parameters, capture what it prints.

Everything here runs inside a Dask worker process. The outcome is a plain dict so it survives any transport.
"""

from __future__ import annotations

import inspect
import io
import sys
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import cloudpickle

from .. import report as report_module
from ..report import Reporter, TrialContext, TrialPruned, activate, current_trial
from ._allocator import tensor_friendly_allocator

# Unpickled training functions by experiment id: the function travels as bytes with every task (cheap), but is
# unpickled once per worker process. The oldest experiments are dropped (with their stop flags) past
# KEPT_EXPERIMENTS, so a long-lived worker stays bounded without the kernel telling it when experiments end.
KEPT_EXPERIMENTS = 256
_functions: OrderedDict[str, Callable] = OrderedDict()
_functions_lock = threading.Lock()


def load_function(key: str, blob: bytes) -> Callable:
    fn = _functions.get(key)
    if fn is None:
        with _functions_lock:
            fn = _functions.get(key)
            if fn is None:
                fn = _functions[key] = cloudpickle.loads(blob)
                while len(_functions) > KEPT_EXPERIMENTS:
                    oldest, _ = _functions.popitem(last=False)
                    report_module.forget_experiment(oldest)
    return fn


def probe_function(key: str, blob: bytes) -> str | None:
    """Try to load the training function on a worker: None if it loads, else the reason it cannot."""
    try:
        load_function(key, blob)
    except Exception as exc:  # any import or unpickling failure is the user's to read, not a crash
        missing = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and missing:
            return (
                f"the workers cannot import module {missing!r}, which the training function needs. "
                f"Install it on the workers, upload it (client.upload_file), or have it pickled by value with "
                f"cloudpickle.register_pickle_by_value({missing}) before starting the experiment."
            )
        return f"the workers cannot load the training function: {type(exc).__name__}: {exc}"
    return None


class _CapturedStream(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr in a worker: a trial thread's writes go to its trial, others pass."""

    def __init__(self, name: str, original) -> None:
        self.name = name
        self.original = original

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        capture = _captures.get(id(current_trial()))
        if capture is None:
            return self.original.write(text)
        capture.write(self.name, text)
        return len(text)

    def flush(self) -> None:
        self.original.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self):  # some libraries ask the stream for its encoding
        return getattr(self.original, "encoding", "utf-8")


class _TrialOutput:
    """The stdout/stderr of one trial attempt, streamed to the kernel a line at a time."""

    def __init__(self, ctx: TrialContext) -> None:
        self.ctx = ctx
        self.pending = {"stdout": "", "stderr": ""}
        # Every rank of a data-parallel trial prints into the same trial output: label its lines.
        self.label = f"[rank {ctx.rank}] " if ctx.world_size > 1 else ""

    def write(self, stream: str, text: str) -> None:
        pending = self.pending[stream] + text
        cut = pending.rfind("\n") + 1
        if cut:
            self._send(stream, pending[:cut])
            pending = pending[cut:]
        self.pending[stream] = pending

    def close(self) -> None:
        for stream, text in self.pending.items():
            if text:
                self._send(stream, text)

    def _send(self, stream: str, text: str) -> None:
        if self.label:
            text = "".join(self.label + line for line in text.splitlines(keepends=True))
        self.ctx.send({"k": "l", "n": stream, "x": text})


_captures: dict[int, _TrialOutput] = {}
_install_lock = threading.Lock()


def _install_capture() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _CapturedStream):
            sys.stdout = _CapturedStream("stdout", sys.stdout)
        if not isinstance(sys.stderr, _CapturedStream):
            sys.stderr = _CapturedStream("stderr", sys.stderr)


def _wants_reporter(fn: Callable) -> bool:
    try:
        return "reporter" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def run_trial(
    fn_key: str,
    fn_blob: bytes,
    params: dict[str, Any],
    exp_id: str,
    trial_id: int,
    topic: str,
    rank: dict | None = None,
) -> dict:
    """Run one trial attempt on this worker and describe how it went (a plain, msgpack-able dict).

    Every attempt gets a fresh id: when a worker dies Dask re-runs the task elsewhere, and the kernel must tell
    the second attempt's reports from the first's. ``rank`` makes this one rank of a data-parallel trial: its
    whole return value then comes back too, as ``result`` in the task's result (never on the event stream).
    """
    from distributed import get_worker

    fn = load_function(fn_key, fn_blob)
    worker = get_worker()
    attempt = rank["attempt"] if rank else uuid.uuid4().hex[:12]
    ctx = TrialContext(exp_id, trial_id, attempt, topic, worker.log_event, rank)
    output = _TrialOutput(ctx)
    _install_capture()
    kwargs = dict(params)
    if _wants_reporter(fn):
        kwargs["reporter"] = Reporter(ctx)

    activate(ctx)
    _captures[id(ctx)] = output
    started = time.time()
    returned, error, state, stopped_at = None, None, "completed", None
    try:
        if ctx.should_stop:  # queued before the stop, started after it
            raise TrialPruned
        with tensor_friendly_allocator():
            returned = fn(**kwargs)
        if ctx.should_stop:
            state = "pruned"  # it returned by itself, but after it was told to stop
    except TrialPruned:
        state, stopped_at = "pruned", time.time()
    except (Exception, SystemExit):  # a failing trial is recorded, never a crashed worker
        state, error = "failed", traceback.format_exc()
        ctx.failed_at = ctx.failed_at or time.time()
    finally:
        duration = time.time() - started
        del _captures[id(ctx)]
        activate(None)
    output.close()

    result = returned
    if state == "completed":
        returned, error = _plain_result(fn, returned)
        if error and rank is not None:  # a data-parallel job may return anything (a model, a state dict)
            returned, error = None, None
        if error:
            state = "failed"
    outcome = {
        "state": state,
        "returned": returned,
        "last": ctx.last,
        "steps": ctx.steps,
        "started": started,
        "duration": duration,
        "error": error,
        "worker": worker.address,
        "stopped_at": stopped_at,  # when report() raised TrialPruned: the stop latency's far end
        "failed_at": ctx.failed_at,
        "rank": ctx.rank,
    }
    # The outcome travels on the event stream too, behind the trial's reports and output: the kernel learns of
    # the end ~2 ms later without a gather round trip, and knows every earlier message has arrived.
    ctx.send({"k": "f", "o": outcome})
    if rank is not None:
        return dict(outcome, attempt=ctx.attempt, result=result)
    return dict(outcome, attempt=ctx.attempt)


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
