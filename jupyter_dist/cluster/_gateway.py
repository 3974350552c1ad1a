"""``cluster="gateway"``: a Dask Gateway cluster of the user's own, made on first use and reused by later cells.

The admin's dask config decides everything (see jupyter_dist.yaml): the gateway's address and the login are
dask-gateway's own settings (``gateway.*``; on JupyterHub the login is the hub user's API token), the cluster's
options and size are ``jupyter_dist.gateway.*``. The cell does not change between a laptop and a hub. With no size
set, the cluster adapts between 0 workers and the experiment's parallelism, within what the gateway allows.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

import dask

from ..errors import ArgumentError, ClusterError
from ._sizing import check_sizing, close_made, grown_span

# Who asked for the cluster's size: the messages name the setting to change.
USER_SIZE = "use_cluster('gateway', workers=/adapt=)"
ADMIN_SIZE = "jupyter_dist.gateway.workers / jupyter_dist.gateway.adapt"
DEFAULT_SIZE = "jupyter_dist's default size (jupyter_dist.gateway.workers or .adapt set another)"
RUN_SIZE = "a data-parallel run's ranks"
# dask-gateway-server's words (routes.py, 2026.3) when it clips a scale or adapt request to the cluster's limit.
CLIPPED = re.compile(r"exceed resource limit of (\d+) workers")

_lock = threading.Lock()
# This kernel's gateway cluster: "cluster", "client", "size" (("adapt", (min, max)) or ("workers", n), as the
# gateway granted it), "asked_in" (who asked for that size) and "limit" (the gateway's, once it said).
_made: dict[str, Any] = {}


def _gateway_module():
    try:
        import dask_gateway
    except ImportError:
        raise ClusterError(
            "cluster='gateway' needs dask-gateway: pip install 'jupyter_dist[gateway]'"
        ) from None
    return dask_gateway


def _settings() -> dict[str, Any]:
    return dask.config.get("jupyter_dist.gateway", {}) or {}


def _size(cluster, workers: int | None, adapt: tuple[int, int] | None, asked_in: str) -> None:
    """Scale or adapt ``cluster`` as asked (``asked_in``: the setting that asked, for the messages), recording the
    size the gateway granted: it clips a request beyond its limit to that limit, with a warning."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        # A refusal: the gateway's HTTP 409 (a scheduler that cannot adapt, say), or the gateway went away.
        try:
            if adapt is not None:
                cluster.adapt(minimum=adapt[0], maximum=adapt[1])
            else:
                cluster.scale(workers)  # which also ends adaptive scaling
        except Exception as exc:
            how = (
                f"adapt between {adapt[0]} and {adapt[1]} workers" if adapt else f"scale to {workers} workers"
            )
            instead = "a fixed number of workers (workers=N)" if adapt else "another size"
            raise ClusterError(
                f"the Dask Gateway refused to {how} (asked by {asked_in}): {type(exc).__name__}: {exc}. Ask for "
                f"{instead}, or ask the gateway's admin why it refuses"
            ) from None
    limit = None
    for warning in said:
        found = CLIPPED.search(str(warning.message))
        if found:
            limit = int(found.group(1))
        # What the gateway said to an explicit size is for the user; to a run's ranks, the run's error says it.
        if not found or asked_in not in (DEFAULT_SIZE, RUN_SIZE):
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if limit is not None:
        _made["limit"] = limit
    if limit == 0:
        raise ClusterError(
            "this Dask Gateway allows your clusters no workers (c.ClusterConfig.cluster_max_workers is 0, or "
            "cluster_max_cores / cluster_max_memory leave no room for one worker), so no trial can run on "
            "cluster='gateway': ask the gateway's admin to raise that limit (jupyter_dist.gateway.workers and "
            ".adapt cannot go beyond it)"
        )
    if adapt is not None:
        _made["size"] = ("adapt", adapt if limit is None else (min(adapt[0], limit), min(adapt[1], limit)))
    else:
        assert workers is not None  # a size is workers= or adapt=
        _made["size"] = ("workers", workers if limit is None else min(workers, limit))
    _made["asked_in"] = asked_in


def gateway_client(
    workers: int | None = None,
    adapt: Any = None,
    *,
    workers_wanted: int | None = None,
    workers_at_once: int | None = None,
):
    """The client of this kernel's gateway cluster: made on first use (or, when clusters are kept past their
    kernel, the user's running one), resized when ``workers`` or ``adapt`` is given.

    A new cluster takes the admin's size (``jupyter_dist.gateway.workers`` / ``.adapt``); with neither set it
    adapts between 0 and ``workers_wanted`` (the experiment's parallelism; DEFAULT_WORKERS when not said), within
    the gateway's limit, and a later experiment wanting more raises that maximum. ``workers_at_once``: the
    workers one trial needs at the same time (a data-parallel trial's ranks), which that maximum has room for
    (the run itself raises the minimum to them while it runs: hold_for_run). A gateway that allows no worker at
    all is a ClusterError now rather than a first task that never runs.
    """
    adapt = check_sizing(workers, adapt)
    dask_gateway = _gateway_module()
    settings = _settings()
    with _lock:
        cluster: Any  # dask_gateway's GatewayCluster and its Client (untyped)
        client: Any
        cluster, client = _made.get("cluster"), _made.get("client")
        new = cluster is None or client is None or client.status != "running"
        made = False  # a cluster made now, not one a previous kernel kept running
        if new:
            _made.clear()
            cluster, made = _open(dask_gateway, settings)
            client = cluster.get_client(set_as_default=False)
            _made.update(cluster=cluster, client=client)
        try:
            if workers is not None or adapt is not None:
                _size(cluster, workers, adapt, USER_SIZE)
            elif new and (settings.get("workers") is not None or settings.get("adapt") is not None):
                admin = check_sizing(settings.get("workers"), settings.get("adapt"))
                _size(cluster, settings.get("workers"), admin, ADMIN_SIZE)
            elif made or _made.get("asked_in") == DEFAULT_SIZE:  # a kept cluster keeps the size it was given
                _size_to_the_experiment(cluster, workers_wanted, workers_at_once)
        except ClusterError:
            if made:  # a cluster no trial can run on is not worth keeping
                _made.clear()
                client.close()
                cluster.close()
            raise
        return client


def _size_to_the_experiment(cluster, wanted: int | None, at_once: int | None) -> None:
    """jupyter_dist's own size (_sizing.grown_span), within the gateway's limit once known."""
    span = grown_span(
        _made.get("size", ("adapt", None))[1], wanted, at_once, _made.get("limit", float("inf"))
    )
    if span is not None:
        _size(cluster, None, span, DEFAULT_SIZE)


def hold_for_run(client, most: int) -> tuple[int, Callable[[], None]] | None:
    """Raise the minimum of this kernel's adaptive gateway cluster to ``most`` workers (and its maximum with it)
    for a run whose ranks start together, which adaptive scaling alone never starts workers for: the minimum the
    gateway granted (its limit clips the request) and how to give the size back after the run. None when
    ``client`` is not that cluster's, its size is fixed, or its minimum already covers ``most``."""
    with _lock:
        size = gateway_size(client)
        if size is None or size[0] != "adapt" or size[1][0] >= most:
            return None
        before, asked_in, cluster = size[1], _made["asked_in"], _made["cluster"]
        _size(cluster, None, (most, max(before[1], most)), RUN_SIZE)
        granted = _made["size"][1][0]

    def give_back() -> None:
        with _lock:
            if _made.get("cluster") is cluster:  # not closed (or replaced) meanwhile
                _size(cluster, None, before, asked_in)

    return granted, give_back


LIMIT_WORDS = (
    "the Dask Gateway's limit for your clusters (c.ClusterConfig.cluster_max_workers, or its cores or memory)"
)


def _open(dask_gateway, settings: dict[str, Any]) -> tuple[Any, bool]:
    """The user's gateway cluster, and whether it was made now (False: one a previous kernel kept running)."""
    keep = not settings.get("shutdown-on-close", True)
    try:
        # Left open: the cluster keeps a gateway client of its own, and a Gateway closed by hand raises from its
        # __del__ later (dask-gateway 2026.3 with distributed 2026.8: its loop is no longer running).
        gateway = dask_gateway.Gateway()
        if keep:  # the cluster a previous kernel of this user left running
            running = gateway.list_clusters(status="running")
            if running:
                return gateway.connect(running[0].name, shutdown_on_close=False), False
        options = gateway.cluster_options()
        for key, value in (settings.get("options") or {}).items():
            if key not in options:
                raise ClusterError(
                    f"jupyter_dist.gateway.options names {key!r}, which this gateway does not offer "
                    f"(it offers: {', '.join(options) or 'no options'})"
                )
            options[key] = value
        return gateway.new_cluster(options, shutdown_on_close=not keep), True
    except (ClusterError, ArgumentError):
        raise
    except Exception as exc:  # no address configured, gateway down, login refused...
        address = dask.config.get("gateway.address", None)
        raise ClusterError(
            f"could not start a Dask Gateway cluster (gateway.address={address!r}): {type(exc).__name__}: {exc}"
        ) from None


def gateway_cluster():
    """This kernel's gateway cluster object, or None when it has made none."""
    return _made.get("cluster")


def gateway_size(client=None) -> tuple[str, Any] | None:
    """How this kernel's gateway cluster is sized, as the gateway granted it: ("adapt", (minimum, maximum)) or
    ("workers", n); None when it has made none (or when ``client`` is given and is not that cluster's)."""
    if client is not None and client is not _made.get("client"):
        return None
    return _made.get("size")


def gateway_adapt(client=None) -> tuple[int, int] | None:
    """The (minimum, maximum) workers this kernel's gateway cluster adapts between, None when it does not (or
    when ``client`` is given and is not that cluster's)."""
    size = gateway_size(client)
    return size[1] if size is not None and size[0] == "adapt" else None


def close_gateway_cluster() -> None:
    """Close this kernel's client of its gateway cluster; the cluster goes too unless it is kept."""
    close_made(_made, _lock)
