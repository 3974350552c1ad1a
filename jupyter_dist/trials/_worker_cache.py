"""What a worker process keeps of the runs it serves: the data it fetched by key (scattered by a run's
``Shipment``, _by_reference.py) and the training functions it unpickled, each until its run ends (``forget``,
which the kernel runs on every worker) or, for functions, until KEPT_EXPERIMENTS newer ones push it out."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import cloudpickle

from ..errors import TrialFunctionError
from ._trial_context import forget_experiment

__all__ = ["KEPT_EXPERIMENTS", "fetch", "forget", "forget_function", "load_function", "probe_function"]

# On a worker: what it fetched by key, until the run that shipped it ends (Shipment.release).
_fetched: dict[str, Any] = {}
_fetch_lock = threading.Lock()


# Unpickled training functions by (experiment id, hash of the pickled function): the function travels as bytes
# with every task (cheap), but is unpickled once per worker process. The hash, because a resumed run keeps its
# experiment's id but may bring a changed function. The oldest are dropped (with their experiment's stop flags)
# past KEPT_EXPERIMENTS, so a long-lived worker stays bounded without the kernel telling it when experiments end.
KEPT_EXPERIMENTS = 256
_functions: OrderedDict[tuple[str, str], Callable] = OrderedDict()
_functions_lock = threading.Lock()


def load_function(key: tuple[str, str], blob: bytes | str) -> Callable:
    """The training function, unpickled once per worker process; ``blob`` is its pickle, or (a str) the key
    its pickle was scattered under (trials/_by_reference.py), fetched only when it is not loaded yet."""
    fn = _functions.get(key)
    if fn is None:
        with _functions_lock:
            fn = _functions.get(key)
            if fn is None:
                if isinstance(blob, str):
                    blob = fetch(blob, keep=False)
                fn = _functions[key] = cloudpickle.loads(blob)
                while len(_functions) > KEPT_EXPERIMENTS:
                    (oldest, _), _ = _functions.popitem(last=False)
                    forget_experiment(oldest)
    return fn


def forget_function(key: tuple[str, str]) -> None:
    """Drop an unpickled function (its run has ended and took its data off the cluster)."""
    with _functions_lock:
        _functions.pop(key, None)


def probe_function(key: tuple[str, str], blob: bytes | str) -> str | None:
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


def forget(keys: list[str], function_key: tuple[str, str] | None) -> None:
    """On a worker: drop what the run's keys brought."""
    with _fetch_lock:
        for key in keys:
            _fetched.pop(key, None)
    if function_key is not None:
        forget_function((function_key[0], function_key[1]))


def fetch(key: str, keep: bool = True) -> Any:
    """On a worker: the data scattered under ``key``, fetched from the worker holding it at most once per
    process while ``keep`` (a pickled function is unpickled once and cached by itself: ``keep=False``)."""
    from distributed import Future, get_client, get_worker

    with _fetch_lock:
        if key in _fetched:
            return _fetched[key]
        worker = get_worker()
        if key in worker.data:  # scattered to this very worker
            value = worker.data[key]
        else:
            client = get_client()
            future: Future[Any] = Future(key, client)
            # A Future made from a key alone (as Dask's own unpickling makes one) waits for news of its key until
            # the scheduler knows this client wants it: what Client._inform_scheduler_of_futures sends.
            client._send_to_scheduler({"op": "client-desires-keys", "keys": [key]})
            value = _wait_for(future, client)
            del future  # this client's want of the key ends here; the run's own Future keeps the data
        if keep:
            _fetched[key] = value
        return value


# How often a worker waiting for scattered data asks whether any worker still holds it.
HOLDER_CHECK_S = 5.0


def _wait_for(future, client) -> Any:
    """The future's data; a TrialFunctionError when no worker holds it any more. Scattered data lives on the
    worker it was put on (and on those that fetched it): if they died it is gone, and nothing would ever say so
    to a Future that waits for it (the scheduler forgets a lost scattered key)."""
    while True:
        try:
            return future.result(timeout=HOLDER_CHECK_S)
        except TimeoutError:
            if not client.who_has([future.key]).get(future.key):
                raise TrialFunctionError(
                    f"the data this run put on the cluster (key {future.key}: with_parameters() objects, or a "
                    "training function above jupyter_dist.scatter-threshold) was lost with the workers holding "
                    "it; run the experiment again (resume=True keeps its finished trials)"
                ) from None
