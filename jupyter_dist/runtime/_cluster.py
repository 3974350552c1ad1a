"""Which Dask cluster trials run on: the embedded LocalCluster, a scheduler address, or a given client/cluster.

Resolution order for ``cluster=None``: the cluster chosen with ``use_cluster()`` (``%distribute_cluster``), the
``JUPYTER_DIST_CLUSTER`` environment variable (a JupyterHub admin sets it for every user), dask config
``jupyter_dist.cluster``, and finally the embedded local cluster.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

import dask

from .._validate import check_positive
from ..errors import ArgumentError, ClusterError

__all__ = ["close_local_cluster", "get_client", "use_cluster"]

LOCAL = "local"
CONNECT_TIMEOUT = "5s"


_lock = threading.Lock()
_local: dict[str, Any] = {}  # "cluster" and "client" of the embedded LocalCluster, made once per process
_remote: dict[str, Any] = {}  # address -> Client, so later cells reuse the connection


_chosen: list[Any] = []  # set by use_cluster()


def use_cluster(cluster: Any = None, *, workers: int | None = None):
    """Choose the cluster that later experiments naming none run on, and return its ``distributed.Client``.

    ``cluster``: "local" (the embedded LocalCluster; ``workers=N`` restarts it with N worker processes), a
    scheduler address ("tcp://host:8786"), a ``distributed.Client`` or a Dask cluster object. With no
    argument, nothing changes: the client of the cluster experiments would use now. ``%distribute_cluster``
    calls this.
    """
    check_positive("workers", workers)
    if workers is not None and cluster != LOCAL:
        raise ArgumentError("workers= sizes the embedded cluster: use it with cluster='local'")
    if cluster is None:
        return get_client()
    if workers is not None:
        close_local_cluster()
    client = get_client(cluster, n_workers=workers) if cluster == LOCAL else get_client(cluster)
    _chosen[:] = [cluster]
    return client


def _default_target() -> Any:
    return (
        (_chosen[0] if _chosen else None)
        or os.environ.get("JUPYTER_DIST_CLUSTER")
        or dask.config.get("jupyter_dist.cluster", None)
        or LOCAL
    )


def get_client(cluster: Any = None, **local_options: Any):
    """A ``distributed.Client`` for ``cluster``: None, "local", "tcp://host:port", a Client, or a cluster object.

    ``local_options`` (n_workers, threads_per_worker, ...) apply only when the embedded cluster is first made.
    """
    from distributed import Client

    if cluster is None:
        cluster = _default_target()
    if isinstance(cluster, Client):
        return cluster
    if isinstance(cluster, str):
        return local_client(**local_options) if cluster == LOCAL else _connect(cluster)
    if hasattr(cluster, "scheduler_address"):  # LocalCluster, GatewayCluster, KubeCluster, SLURMCluster, ...
        return _connect(cluster.scheduler_address)
    raise ClusterError(
        f"cluster= takes 'local', a scheduler address like 'tcp://host:8786', a distributed.Client or a Dask "
        f"cluster object; got {type(cluster).__name__} {cluster!r:.60}"
    )


def _connect(address: str):
    from distributed import Client

    with _lock:
        client = _remote.get(address)
        if client is not None and client.status == "running":
            return client
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"could not reach the Dask scheduler at {address!r} within {CONNECT_TIMEOUT}: {exc}. "
                "Is the scheduler running, and is the address right?"
            ) from None
        _remote[address] = client
        return client


def local_client(n_workers: int | None = None, threads_per_worker: int = 1, **options: Any):
    """The client of the embedded LocalCluster, started on first use and reused by later cells."""
    from distributed import Client, LocalCluster

    with _lock:
        client = _local.get("client")
        if client is not None and client.status == "running":
            return client
        # Non-daemonic worker processes, so a trial can start processes of its own: DataLoader(num_workers>0)
        # fails in a daemonic one ("daemonic processes are not allowed to have children").
        with dask.config.set({"distributed.worker.daemon": False}):
            cluster = LocalCluster(
                n_workers=n_workers or min(os.cpu_count() or 1, 8),
                threads_per_worker=threads_per_worker,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                **options,
            )
        _local["cluster"] = cluster
        _local["client"] = client = Client(cluster, set_as_default=False)
        # Registered now, after distributed's own exit hook (which closes every cluster): hooks run last-first,
        # so the client closes first, flushing its last messages (released results) to the scheduler, instead
        # of the workers going away under it ("caused the cluster to lose already computed task(s)").
        atexit.unregister(close_local_cluster)
        atexit.register(close_local_cluster)
        from ._worker_plugins import IgnoreKernelInterrupts  # imports distributed: only when a cluster starts

        client.register_plugin(IgnoreKernelInterrupts())
        return client


def close_local_cluster() -> None:
    """Shut the embedded cluster down (it is also shut down when the kernel exits)."""
    with _lock:
        client, cluster = _local.pop("client", None), _local.pop("cluster", None)
        # a client made from the cluster object (cluster=LocalCluster) would outlive its scheduler
        by_address = _remote.pop(cluster.scheduler_address, None) if cluster is not None else None
    for c in (by_address, client):
        if c is not None:
            c.close()
    if cluster is not None:
        cluster.close()
