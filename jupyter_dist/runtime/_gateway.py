"""``cluster="gateway"``: a Dask Gateway cluster of the user's own, made on first use and reused by later cells.

The admin's dask config decides everything (see jupyter_dist.yaml): the gateway's address and the login are
dask-gateway's own settings (``gateway.*``; on JupyterHub the login is the hub user's API token), the cluster's
options and size are ``jupyter_dist.gateway.*``. The cell does not change between a laptop and a hub.
"""

from __future__ import annotations

import threading
from typing import Any

import dask

from ..errors import ArgumentError, ClusterError

_lock = threading.Lock()
_made: dict[str, Any] = {}  # "cluster", "client" and "adapt" (min, max) of this kernel's gateway cluster


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


def _size(cluster, workers: int | None, adapt: tuple[int, int] | None) -> None:
    if adapt is not None:
        cluster.adapt(minimum=adapt[0], maximum=adapt[1])
        _made["adapt"] = adapt
    elif workers is not None:
        cluster.scale(workers)  # which also ends adaptive scaling
        _made.pop("adapt", None)


def gateway_client(workers: int | None = None, adapt: Any = None):
    """The client of this kernel's gateway cluster: made on first use (or, when clusters are kept past their
    kernel, the user's running one), resized when ``workers`` or ``adapt`` is given."""
    adapt = check_sizing(workers, adapt)
    dask_gateway = _gateway_module()
    settings = _settings()
    with _lock:
        cluster, client = _made.get("cluster"), _made.get("client")
        if cluster is None or client is None or client.status != "running":
            cluster = _open(dask_gateway, settings)
            client = cluster.get_client(set_as_default=False)
            _made.update(cluster=cluster, client=client)
            if workers is None and adapt is None:  # the admin's size for a new cluster
                adapt = check_sizing(settings.get("workers"), settings.get("adapt"))
                workers = settings.get("workers")
        _size(cluster, workers, adapt)
        return client


def _open(dask_gateway, settings: dict[str, Any]):
    keep = not settings.get("shutdown-on-close", True)
    try:
        gateway = dask_gateway.Gateway()
        if keep:  # the cluster a previous kernel of this user left running
            running = gateway.list_clusters(status="running")
            if running:
                return gateway.connect(running[0].name, shutdown_on_close=False)
        options = gateway.cluster_options()
        for key, value in (settings.get("options") or {}).items():
            if key not in options:
                raise ClusterError(
                    f"jupyter_dist.gateway.options names {key!r}, which this gateway does not offer "
                    f"(it offers: {', '.join(options) or 'no options'})"
                )
            options[key] = value
        return gateway.new_cluster(options, shutdown_on_close=not keep)
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


def gateway_adapt(client=None) -> tuple[int, int] | None:
    """The (minimum, maximum) workers this kernel's gateway cluster adapts between, None when it does not (or
    when ``client`` is given and is not that cluster's)."""
    if client is not None and client is not _made.get("client"):
        return None
    return _made.get("adapt")


def close_gateway_cluster() -> None:
    """Close this kernel's client of its gateway cluster; the cluster goes too unless it is kept."""
    with _lock:
        client, cluster = _made.pop("client", None), _made.pop("cluster", None)
        _made.pop("adapt", None)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()
