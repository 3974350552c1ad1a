"""Large data by reference: put it on the cluster once per run, and let each worker fetch it once.

A run's training function is cloudpickled once and those bytes go with every trial task
(``protocol.TrialTask.pickled``), so a function closing over a 2 GB array would send 2 GB per trial. Two ways
around that, both through one ``Shipment`` per run:

- automatically: pickled bytes above ``jupyter_dist.scatter-threshold`` (dask config, default 1 MiB) are
  scattered once, and the tasks carry only their key;
- explicitly: ``with_parameters(fn, data=big)`` (Ray Tune's name): each object is scattered once per run and
  handed to every trial as a keyword argument, whatever the size of the function itself.

A worker fetches a key itself (``_worker_cache.fetch``), once, rather than taking it as a task dependency: Dask's active memory
manager drops the replicas no queued task needs, so as dependencies the data would travel again for many trials.
The run's end releases its keys on the cluster and has every worker forget what it fetched or unpickled from them.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ArgumentError
from ._worker_cache import fetch, forget

__all__ = ["Shipment", "WithParameters", "scatter_threshold", "with_parameters"]

# The run whose function is being pickled now: a WithParameters met on the way ships its objects there.
_shipping: contextvars.ContextVar[Shipment | None] = contextvars.ContextVar(
    "jupyter_dist_shipping", default=None
)


def scatter_threshold() -> int:
    """Pickled functions larger than this many bytes go to the cluster once (dask config
    ``jupyter_dist.scatter-threshold``: bytes, or a size such as "1 MiB"; null: never)."""
    import dask.config
    from dask.utils import parse_bytes

    value = dask.config.get("jupyter_dist.scatter-threshold", "1 MiB")
    if value is None:
        return 2**63
    try:
        return parse_bytes(value)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"dask config jupyter_dist.scatter-threshold={value!r}: give a size in bytes or as '1 MiB', or null"
        ) from None


class Shipment:
    """What one run put on ``client``'s cluster: its futures (which keep the data there) and their keys."""

    def __init__(self, client) -> None:
        self.client = client
        self.futures: list = []

    @contextmanager
    def shipping(self) -> Iterator[None]:
        """While pickling the run's function: each WithParameters in it ships its objects here."""
        token = _shipping.set(self)
        try:
            yield
        finally:
            _shipping.reset(token)

    def put(self, obj: Any) -> str:
        """Scatter ``obj`` (as one piece, whatever its type) and return its key."""
        # hash=False: a fresh key per run, so one run's release never takes another run's data.
        (future,) = self.client.scatter([obj], hash=False)
        self.futures.append(future)
        return future.key

    @property
    def keys(self) -> list[str]:
        return [future.key for future in self.futures]

    def release(self, function_key: tuple[str, str] | None = None) -> None:
        """Let the cluster drop the data, and every worker forget what it fetched (and ``function_key``'s
        unpickled function, which may close over large data) — so a long-lived cluster keeps nothing of the run."""
        if not self.futures and function_key is None:
            return
        keys, futures, self.futures = self.keys, self.futures, []
        if self.client.status == "running":
            try:
                self.client.run(forget, keys, function_key)
            except OSError:
                pass  # a worker gone meanwhile holds nothing any more
        for future in futures:
            future.release()


def _without(fn: Callable, names: list[str]) -> inspect.Signature:
    sig = inspect.signature(fn)
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name not in names])


class WithParameters:
    __wrapped__: Callable  # functools.update_wrapper sets it
    """``fn`` with ``objects`` bound as keyword arguments: called here, it passes them as they are; pickled for
    a run's trials, only the keys they were scattered under travel (``_Bound``)."""

    def __init__(self, bound: _Bound) -> None:
        # Wrappers of the function (an ablation's, a data-parallel run's) copy its __dict__ into theirs
        # (functools.update_wrapper): the objects stay behind one attribute, pickled once and by reference.
        functools.update_wrapper(self, bound.fn)
        self._jd_bound = bound
        # Search spaces and the kinds' argument checks see fn's other arguments only.
        self.__signature__ = _without(bound.fn, bound.names)

    def __call__(self, **kwargs: Any) -> Any:
        return self._jd_bound(**kwargs)

    def __reduce__(self):
        return (WithParameters, (self._jd_bound,))

    def __repr__(self) -> str:
        return f"with_parameters({getattr(self.__wrapped__, '__name__', '?')}, {', '.join(self._jd_bound.names)})"


class _Bound:
    """The function and its objects (``objects``), or, as the workers get it, the keys they were scattered under
    (``keys``), each fetched once per worker process."""

    def __init__(
        self, fn: Callable, objects: dict[str, Any] | None, keys: dict[str, str] | None = None
    ) -> None:
        self.fn, self.objects, self.keys = fn, objects, keys

    @property
    def names(self) -> list[str]:
        if self.objects is not None:
            return list(self.objects)
        assert self.keys is not None  # the objects, or the keys they were scattered under
        return list(self.keys)

    def __call__(self, **kwargs: Any) -> Any:
        if self.objects is not None:
            return self.fn(**self.objects, **kwargs)
        assert self.keys is not None  # the objects, or the keys they were scattered under
        return self.fn(**{name: fetch(key) for name, key in self.keys.items()}, **kwargs)

    def __reduce__(self):
        shipment = _shipping.get()
        if shipment is None or self.objects is None:  # pickled outside a run (by the user), or already keys
            return (_Bound, (self.fn, self.objects, self.keys))
        keys = {name: shipment.put(obj) for name, obj in self.objects.items()}
        return (_Bound, (self.fn, None, keys))


def with_parameters(fn: Callable, **objects: Any) -> WithParameters:
    """``fn`` with large ``objects`` passed by reference: each is put on the cluster once per run and every
    trial gets it as the keyword argument of its name (Ray Tune's ``tune.with_parameters``).

    Without it, whatever ``fn`` closes over is pickled into every trial task. Called directly,
    ``with_parameters(train, data=arrays)(lr=0.1)`` is ``train(data=arrays, lr=0.1)``. Works with ``hpo()``,
    ``ablation()`` and ``data_parallel()``; the wrapped function keeps ``fn``'s name, and search spaces see only
    its other arguments. The objects are released from the cluster (and from every worker's memory) when the run
    ends.

    Parameters
    ----------
    fn
        The training function; it takes each of ``objects`` as a keyword argument.
    **objects
        The data, by the argument names ``fn`` takes them as (arrays, tensors, datasets: anything picklable).

    Returns
    -------
    WithParameters
        A callable to pass wherever ``fn`` would go.
    """
    if not callable(fn):
        raise ArgumentError(
            f"with_parameters(fn, ...): fn must be callable, got {type(fn).__name__} {fn!r:.60}"
        )
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for name in objects:
        if not takes_any and name not in params:
            known = ", ".join(params) or "none"
            raise ArgumentError(
                f"with_parameters({getattr(fn, '__name__', 'fn')}, {name}=...): "
                f"{getattr(fn, '__name__', 'fn')}() has no argument {name!r} (it accepts: {known}); "
                "name each object as the argument that receives it"
            )
    return WithParameters(_Bound(fn, objects))
