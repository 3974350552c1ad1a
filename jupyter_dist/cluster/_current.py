"""Which Dask cluster trials run on: the embedded LocalCluster, a Dask Gateway cluster, a scheduler address, or a
given client/cluster.

Resolution order for ``cluster=None``: the cluster chosen with ``use_cluster()`` (``%distribute_cluster``), the
``JUPYTER_DIST_CLUSTER`` environment variable (a JupyterHub admin sets it for every user), dask config
``jupyter_dist.cluster``, and finally the embedded local cluster.
"""

from __future__ import annotations

import atexit
import gc
import math
import os
import threading
from typing import Any

import dask

from .._imported import imported
from .._validate import check_positive
from ..errors import ArgumentError, ClusterError
from ._dashboard import dashboard_link
from ._embedded import embedded_cluster_config, local_gpu_types, local_gpus, modules_to_preimport
from ._gateway import close_gateway_cluster, gateway_adapt, gateway_client, gateway_cluster
from ._info import ClusterInfo, describe
from ._sizing import check_sizing
from .slurm import close_slurm_cluster, describe_size, refusal, slurm_adapt, slurm_client, slurm_size

__all__ = [
    "NAMED_CLUSTERS",
    "ClusterInfo",
    "close_local_cluster",
    "cluster_info",
    "fit_gpu_workers",
    "forget_cluster",
    "get_client",
    "use_cluster",
    "workers_specified",
]

LOCAL = "local"
GATEWAY = "gateway"
SLURM = "slurm"
# The clusters this kernel makes for the user, on first use: name -> the function that returns their client.
_MADE_FOR_THE_USER = {GATEWAY: gateway_client, SLURM: slurm_client}
# The clusters cluster= and use_cluster() take by name (anything else is an address or an object): the help of
# every option naming a cluster lists them.
NAMED_CLUSTERS = (LOCAL, *_MADE_FOR_THE_USER)
CONNECT_TIMEOUT = "5s"
# How long forgetting a client waits for it to close: its scheduler may be gone already.
CLOSE_TIMEOUT = 5


_lock = threading.Lock()
_local: dict[str, Any] = {}  # "cluster" and "client" of the embedded LocalCluster, made once per process
_remote: dict[str, Any] = {}  # address -> Client, so later cells reuse the connection
_given: dict[int, tuple[Any, Any]] = {}  # id(cluster object) -> (the object, its Client)


_chosen: list[Any] = []  # set by use_cluster()


def use_cluster(cluster: Any = None, *, workers: int | None = None, adapt: Any = None):
    """Choose the cluster that later experiments naming none run on, and return its ``distributed.Client``.

    ``cluster``: "local" (the embedded LocalCluster; ``workers=N`` restarts it with N worker processes),
    "gateway" (a Dask Gateway cluster of the user's own; ``workers=N`` scales it, ``adapt=(min, max)`` makes it
    adaptive), "slurm" (a dask-jobqueue SLURMCluster of the user's own, one Slurm job per worker; sized as a
    gateway cluster), a scheduler address ("tcp://host:8786", "tls://..."), a ``distributed.Client`` or a Dask
    cluster object (``adapt=`` calls its ``adapt``). With no argument, nothing changes: the client of the
    cluster experiments would use now. ``%distribute_cluster`` calls this.
    """
    if cluster is None and (workers is not None or adapt is not None):
        cluster = _default_target()
    if isinstance(cluster, str) and cluster in _MADE_FOR_THE_USER:
        client = _MADE_FOR_THE_USER[cluster](workers=workers, adapt=adapt)
    else:
        check_positive("workers", workers)
        if workers is not None and cluster != LOCAL:
            raise ArgumentError(
                "workers= sizes the embedded cluster, a gateway or a Slurm cluster: use it with cluster='local', "
                "'gateway' or 'slurm'"
            )
        if adapt is not None and not hasattr(cluster, "adapt"):
            raise ArgumentError(
                "adapt= makes a gateway or Slurm cluster (or a Dask cluster object) adaptive: use it with "
                "cluster='gateway' or 'slurm'"
            )
        if cluster is None:
            return get_client()
        if workers is not None:
            close_local_cluster()
        client = get_client(cluster, n_workers=workers) if cluster == LOCAL else get_client(cluster)
        if adapt is not None:
            sized = check_sizing(None, adapt)
            assert sized is not None  # adapt is given
            low, high = sized
            cluster.adapt(minimum=low, maximum=high)
    _chosen[:] = [cluster]
    return client


def _default_target() -> Any:
    return (
        (_chosen[0] if _chosen else None)
        or os.environ.get("JUPYTER_DIST_CLUSTER")
        or dask.config.get("jupyter_dist.cluster", None)
        or LOCAL
    )


def get_client(
    cluster: Any = None,
    *,
    workers_wanted: int | None = None,
    workers_at_once: int | None = None,
    **local_options: Any,
):
    """A ``distributed.Client`` for ``cluster``: None, "local", "gateway", "slurm", "tcp://host:port", a Client,
    or a cluster object.

    ``workers_wanted``: the most workers the experiment can use at once (its parallel=, times its ranks); it
    sizes a gateway or Slurm cluster whose size neither the admin nor the user chose (adaptive up to that many).
    ``workers_at_once``: the workers one of its trials needs at the same time (a data-parallel trial's ranks):
    such a cluster's maximum has room for that many (the run holds them while it runs: _growth.hold_workers).
    ``local_options`` (n_workers, threads_per_worker, ...) apply only when the embedded cluster is first made.
    """
    from distributed import Client

    if cluster is None:
        cluster = _default_target()
    if isinstance(cluster, Client):
        return cluster
    if isinstance(cluster, str):
        if cluster == LOCAL:
            return local_client(**local_options)
        if cluster in _MADE_FOR_THE_USER:
            return _MADE_FOR_THE_USER[cluster](workers_wanted=workers_wanted, workers_at_once=workers_at_once)
        return _connect(cluster)
    if isinstance(getattr(cluster, "scheduler_address", None), str):  # LocalCluster, GatewayCluster, ...
        return _from_cluster_object(cluster)
    raise ClusterError(
        f"cluster= takes 'local', 'gateway', 'slurm', a scheduler address like 'tcp://host:8786', a distributed.Client "
        f"or a Dask cluster object; got {type(cluster).__name__} {cluster!r:.60}"
    )


def forget_cluster(cluster: Any) -> bool:
    """Close this kernel's client of ``cluster`` and forget it, so that the next experiment naming it connects
    afresh; True when there was one.

    ``cluster``: a scheduler address or a cluster object, whose cluster runs on; "local", "gateway" or "slurm",
    the clusters made for this kernel, which are shut down (a gateway cluster kept past its kernel is left
    running; a Slurm cluster's worker jobs are cancelled).
    When it is the cluster ``use_cluster()`` chose, experiments naming none go back to the default
    (``JUPYTER_DIST_CLUSTER``, dask config ``jupyter_dist.cluster``, else the embedded cluster).
    """
    if _chosen and (_chosen[0] is cluster or (isinstance(cluster, str) and _chosen[0] == cluster)):
        _chosen.clear()
    if cluster == LOCAL:
        held = "client" in _local
        close_local_cluster()
        return held
    if cluster == GATEWAY:
        held = gateway_cluster() is not None
        close_gateway_cluster()
        return held
    if cluster == SLURM:
        held = slurm_size() is not None
        close_slurm_cluster()
        return held
    with _lock:
        if isinstance(cluster, str):
            client = _remote.pop(cluster, None)
        else:
            given = _given.get(id(cluster))
            client = _given.pop(id(cluster))[1] if given is not None and given[0] is cluster else None
    if client is None:
        return False
    client.close(timeout=CLOSE_TIMEOUT)
    return True


def cluster_info(cluster: Any = None) -> ClusterInfo:
    """Where experiments naming ``cluster`` (None: none) run: its kind, name, workers, threads, memory, GPUs and
    dashboard, as ``%distribute_cluster`` shows it. Connects (or starts the cluster) as a run would."""
    target = _default_target() if cluster is None else cluster
    client = get_client(target)
    address = getattr(client.scheduler, "address", None) or "?"
    adaptive = None
    if target == LOCAL:
        kind, name = "embedded LocalCluster", address
    elif target == GATEWAY:
        kind, name = "Dask Gateway cluster", gateway_cluster().name
        span = gateway_adapt()
        adaptive = f"adapting between {span[0]} and {span[1]} workers" if span else None
    elif target == SLURM:
        kind, name = "Slurm cluster (dask-jobqueue)", address
        adaptive = describe_size()
    elif isinstance(target, str):
        kind, name = "Dask scheduler", target
    else:
        held = getattr(client, "cluster", None) or target
        kind, name = type(held).__name__, str(getattr(held, "name", None) or address)
    return describe(kind, name, client, dashboard_link(client), adaptive)


def adaptive_maximum(client) -> int | None:
    """The most workers ``client``'s cluster may grow to by itself: a gateway or Slurm cluster made adaptive
    here, or a Dask cluster object whose ``adapt()`` was called. None when its size is fixed, unbounded or unknown (a bare
    scheduler address does not say)."""
    span = kept_span(client)
    if span is not None:
        return span[1]
    adaptive = getattr(getattr(client, "cluster", None), "_adaptive", None)  # distributed's Cluster.adapt()
    maximum = getattr(adaptive, "maximum", None)
    return int(maximum) if isinstance(maximum, (int, float)) and math.isfinite(maximum) else None


def kept_span(client) -> tuple[int, int] | None:
    """The (minimum, maximum) workers a cluster this kernel made for the user adapts between (gateway, Slurm);
    None for any other cluster."""
    return gateway_adapt(client) or slurm_adapt(client)


def workers_specified(client) -> int | None:
    """How many workers the client's cluster object keeps running (a SpecCluster's spec: the embedded cluster,
    a LocalCluster, dask-jobqueue), whether or not each is connected now (a worker being restarted is not); None
    for a cluster reached without such an object."""
    spec = getattr(getattr(client, "cluster", None), "worker_spec", None)
    return len(spec) if isinstance(spec, dict) else None


def workers_refused(client) -> str | None:
    """Why the cluster this kernel made for the user cannot start the workers it was asked for, in its own words
    (Slurm refused a worker job); None when nothing says so."""
    return refusal(client)


def _from_cluster_object(cluster):
    """A client of a cluster object, made from the object itself: Client(cluster) uses the cluster's own
    security (a GatewayCluster's TLS context, a KubeCluster's certificates), which its bare
    ``scheduler_address`` would not carry."""
    from distributed import Client

    with _lock:
        held = _given.get(id(cluster))
        if held is not None and held[0] is cluster and held[1].status == "running":
            return held[1]
        try:
            client = Client(cluster, set_as_default=False)
        except (OSError, TimeoutError, RuntimeError) as exc:
            raise ClusterError(
                f"could not connect to {type(cluster).__name__} {cluster!r:.80}: {exc}"
            ) from None
        _given[id(cluster)] = (cluster, client)  # the object is held, so its id is not reused while cached
        return client


def _connect(address: str):
    from distributed import Client

    with _lock:
        client = _remote.get(address)
        if client is not None and client.status == "running":
            return client
        problem = None
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            problem = (
                f"could not reach the Dask scheduler at {address!r} within {CONNECT_TIMEOUT}: {exc}. "
                "Is the scheduler running, and is the address right?"
            )
        except TypeError:  # distributed's words for "no TLS context": no certificate configured
            if not address.startswith("tls://"):
                raise
            problem = (
                f"{address!r} is a TLS scheduler and this kernel has no TLS certificate for it: set Dask's "
                "distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and .client.key, or pass "
                "cluster= a Client made with distributed.Security(...)"
            )
        if problem is not None:
            # The half-made Client lives on in reference cycles. Collected whenever the garbage collector next
            # runs, its __del__ closed it from wherever that was and could block on distributed's loop-runner
            # lock (seen once: a refused TLS client held a test until its 300 s timeout). Collect it here.
            gc.collect()
            raise ClusterError(problem)
        _remote[address] = client
        return client


def local_client(n_workers: int | None = None, threads_per_worker: int = 1, **options: Any):
    """The client of the embedded LocalCluster, started on first use and reused by later cells."""
    from distributed import Client

    from ._local_cluster import EmbeddedLocalCluster

    with _lock:
        client = _local.get("client")
        if client is not None and client.status == "running":
            return client
        # Non-daemonic worker processes, so a trial can start processes of its own: DataLoader(num_workers>0)
        # fails in a daemonic one ("daemonic processes are not allowed to have children").
        # A machine's GPUs are declared unless the call chose the workers' resources (see local_gpus()).
        gpus = [] if "resources" in options else local_gpus()
        with dask.config.set({"distributed.worker.daemon": False, **embedded_cluster_config()}):
            cluster = EmbeddedLocalCluster(
                n_workers=n_workers or min(os.cpu_count() or 1, 8),
                threads_per_worker=threads_per_worker,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                gpus=gpus,
                gpu_types=local_gpu_types(gpus),
                **options,
            )
        _local["cluster"] = cluster
        _local["client"] = client = Client(cluster, set_as_default=False)
        # Registered now, after distributed's own exit hook (which closes every cluster): hooks run last-first,
        # so the client closes first, flushing its last messages (released results) to the scheduler, instead
        # of the workers going away under it ("caused the cluster to lose already computed task(s)").
        atexit.unregister(close_local_cluster)
        atexit.register(close_local_cluster)
        from ._worker_plugins import IgnoreKernelInterrupts, PreimportModules, YieldToTheKernel

        client.register_plugin(IgnoreKernelInterrupts())
        client.register_plugin(YieldToTheKernel())
        client.register_plugin(PreimportModules(modules_to_preimport()))
        return client


def fit_gpu_workers(client, share: float) -> None:
    """Lay the embedded cluster's GPU workers out for trials of ``share`` GPUs each (cluster/_gpu_slots.py); any
    other cluster's workers are its admin's to declare."""
    fit = getattr(getattr(client, "cluster", None), "fit_gpu_share", None)
    if fit is not None:  # an EmbeddedLocalCluster's (its module is imported only once one is made)
        fit(share, client)


def check_kernel_cuda(cluster: Any) -> None:
    """Accelerate's most reported notebook failure is CUDA initialised in the kernel before it forks the workers
    ("Cannot re-initialize CUDA in forked subprocess"). The embedded cluster's workers are spawned, not forked,
    so it cannot happen, unless Dask is configured to fork them: then refuse before anything starts. Another
    cluster's workers are not this kernel's children, and its CUDA state does not reach them."""
    torch = imported("torch")
    embedded = (cluster if cluster is not None else _default_target()) == LOCAL
    forks = dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork"
    if embedded and forks and torch is not None and torch.cuda.is_initialized():
        raise ClusterError(
            "CUDA is initialised in this kernel and Dask is configured to fork the embedded cluster's worker "
            "processes (distributed.worker.multiprocessing-method: fork): forked workers cannot use CUDA. Use "
            "the default 'spawn', or restart the kernel and run the experiment before touching CUDA"
        )


def close_local_cluster() -> None:
    """Shut the embedded cluster down (it is also shut down when the kernel exits)."""
    with _lock:
        client, cluster = _local.pop("client", None), _local.pop("cluster", None)
        # a client made from the cluster object (cluster=LocalCluster) would outlive its scheduler
        given = _given.pop(id(cluster), (None, None))[1] if cluster is not None else None
    for c in (given, client):
        if c is not None:
            c.close()
    if cluster is not None:
        cluster.close()
