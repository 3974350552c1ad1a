"""How a cluster this kernel makes for the user (a Dask Gateway cluster, a Slurm cluster) is sized: a fixed number
of workers, or adaptive between a minimum and a maximum, grown to what an experiment can use."""

from __future__ import annotations

import threading
from typing import Any

from ..errors import ArgumentError

# The most workers jupyter_dist's own adaptive size grows to when the experiment does not say how many it wants.
DEFAULT_WORKERS = 2


def check_sizing(workers: Any, adapt: Any) -> tuple[int, int] | None:
    """``adapt`` as (minimum, maximum), after checking ``workers`` and ``adapt`` name a possible size."""
    if workers is not None and (not isinstance(workers, int) or workers < 0):
        raise ArgumentError(f"workers= must be a whole number >= 0; got {workers!r}")
    if adapt is None:
        return None
    pair = adapt
    if isinstance(adapt, dict):
        pair = (adapt.get("minimum", 0), adapt.get("maximum"))
    elif isinstance(adapt, str):
        pair = adapt.split(",")
    try:
        low, high = (int(v) for v in pair)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"adapt= takes (minimum, maximum) workers, like (0, 20) or '0,20'; got {adapt!r}"
        ) from None
    if not 0 <= low <= high or high == 0:
        raise ArgumentError(f"adapt= needs 0 <= minimum <= maximum and maximum > 0; got {low}, {high}")
    return low, high


def grown_span(
    span: tuple[int, int] | None,
    wanted: int | None,
    at_once: int | None,
    limit: float = float("inf"),
) -> tuple[int, int] | None:
    """jupyter_dist's own adaptive size for an experiment: from 0 up to what it wants (DEFAULT_WORKERS when it
    does not say; at least the workers one trial needs at once, a data-parallel trial's ranks), within ``limit``.
    Only ever raised from ``span``, the size so far: a maximum above what a run uses costs nothing. The minimum
    stays: a data-parallel run raises it for its own duration (_growth.py). None when ``span`` already covers
    it."""
    minimum, maximum = span or (0, 0)
    wanted = int(min(max(wanted or DEFAULT_WORKERS, at_once or 0), limit))
    if maximum >= wanted:
        return None
    return minimum, wanted


def close_made(made: dict[str, Any], lock: threading.Lock) -> None:
    """Forget the cluster a kernel made for the user (``made``: its "client" and "cluster", if any), then close
    the client and the cluster object (which shuts down what it owns; a kept cluster has no object here)."""
    with lock:
        client, cluster = made.pop("client", None), made.pop("cluster", None)
        made.clear()
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()
