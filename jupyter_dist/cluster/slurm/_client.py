"""``cluster="slurm"``: a dask-jobqueue SLURMCluster of the user's own, made on first use and reused by later cells.

Each Dask worker is one Slurm job (``sbatch``); the scheduler runs in the kernel's process, so its dashboard is
on this machine and the views link it through the user's Jupyter server. The HPC admin's dask config decides the
jobs (``jupyter_dist.slurm.*``: _settings.py); dask-jobqueue's own ``jobqueue.slurm.*`` settings fill in what it
leaves unset. As for a gateway cluster, the cell does not change between a laptop and the HPC centre.

What Slurm does to jobs is what happens to workers: a job that Slurm preempts, cancels or ends at its walltime is
a lost worker, and trials on it run again (from their checkpoint). Workers retire before their walltime
(distributed's ``--lifetime``, staggered so they do not all go at once) and adaptive scaling submits their
replacements, so an experiment outlasts any one job. A cluster kept past its kernel (``shutdown-on-close:
false``) lives in a keeper process instead (_keeper.py); what runs on its scheduler reads the same state
(_state.py) there.
"""

from __future__ import annotations

import atexit
import warnings
from collections.abc import Callable
from typing import Any

from .._sizing import check_sizing, close_made, grown_span
from ._jobs import open_cluster, refusal_here, why_here
from ._state import lock, made
from ._state import settings as slurm_settings

__all__ = [
    "LIMIT_WORDS",
    "close_slurm_cluster",
    "describe_size",
    "hold_for_run",
    "refusal",
    "slurm_adapt",
    "slurm_client",
    "slurm_cluster",
    "slurm_size",
    "why_no_workers",
]

USER_SIZE = "use_cluster('slurm', workers=/adapt=)"
ADMIN_SIZE = "jupyter_dist.slurm.workers / jupyter_dist.slurm.adapt"
DEFAULT_SIZE = "jupyter_dist's default size"
RUN_SIZE = "a data-parallel run's ranks"
LIMIT_WORDS = "jupyter_dist.slurm.adapt's maximum (the most worker jobs this site allows one notebook)"


def refusal(client=None) -> str | None:
    """Why this kernel's Slurm cluster cannot give workers, in Slurm's or the workers' words: Slurm refused a
    worker job, or a worker job ran and its worker could not reach the scheduler. None: nothing says so (or
    ``client`` is not that cluster's)."""
    if client is not None and client is not made.get("client"):
        return None
    if made.get("kept"):
        return made["client"].run_on_scheduler(refusal_here)
    return refusal_here()


def slurm_client(
    workers: int | None = None,
    adapt: Any = None,
    *,
    workers_wanted: int | None = None,
    workers_at_once: int | None = None,
):
    """The client of this kernel's Slurm cluster: made on first use, resized when ``workers`` or ``adapt`` is
    given; sized as a gateway cluster is (cluster/_gateway.py): the admin's size, else adaptive from 0 up to what the
    experiment wants (a data-parallel run raises the minimum to its ranks while it runs: hold_for_run)."""
    adapt = check_sizing(workers, adapt)
    settings = slurm_settings()
    with lock:
        client = made.get("client")
        new = client is None or client.status != "running"
        if new:
            made.clear()
            if settings.get("shutdown-on-close", True) is False:
                client, new = _kept(settings)  # new: its keeper was started now
            else:
                cluster = open_cluster(settings)
                try:
                    from distributed import Client

                    client = Client(cluster, set_as_default=False)
                except Exception:
                    cluster.close()
                    raise
                made.update(cluster=cluster, client=client)
                new = True
            made["client"] = client
            atexit.unregister(close_slurm_cluster)  # once, however many clusters this kernel makes
            atexit.register(close_slurm_cluster)
        if workers is not None or adapt is not None:
            workers, adapt = _within_admin_bounds(settings, workers, adapt)
            _size(workers, adapt, USER_SIZE)
        elif new and (settings.get("workers") is not None or settings.get("adapt") is not None):
            admin = check_sizing(settings.get("workers"), settings.get("adapt"))
            _size(settings.get("workers"), admin, ADMIN_SIZE)
        elif made.get("asked_in") in (None, DEFAULT_SIZE):
            span = grown_span(slurm_adapt(), workers_wanted, workers_at_once)
            if span is not None:
                _size(None, span, DEFAULT_SIZE)
        return client


def _within_admin_bounds(
    settings: dict[str, Any], workers: int | None, adapt: tuple[int, int] | None
) -> tuple[int | None, tuple[int, int] | None]:
    """A size the user asked for, within the admin's: ``jupyter_dist.slurm.adapt``'s maximum bounds every size
    (what a site allows one user's notebook to hold), with a warning when it clips one."""
    admin = check_sizing(None, settings.get("adapt"))
    if admin is None:
        return workers, adapt
    limit = admin[1]
    clipped = (
        min(workers, limit) if workers is not None else None,
        (min(adapt[0], limit), min(adapt[1], limit)) if adapt is not None else None,
    )
    if clipped != (workers, adapt):
        asked = (
            f"{workers} worker jobs"
            if workers is not None or adapt is None  # (one of them is given: it was clipped)
            else f"adapt between {adapt[0]} and {adapt[1]}"
        )
        warnings.warn(
            f"jupyter_dist.slurm.adapt allows at most {limit} worker jobs: asked for {asked}, sized to {limit}",
            stacklevel=4,
        )
    return clipped


def hold_for_run(client, most: int) -> tuple[int, Callable[[], None]] | None:
    """Raise the minimum of this kernel's adaptive Slurm cluster to ``most`` worker jobs (and its maximum with
    it) for a run whose ranks start together, which adaptive scaling alone never submits jobs for: the minimum
    granted (the admin's ``jupyter_dist.slurm.adapt`` maximum bounds it) and how to give the size back after the
    run. None when ``client`` is not that cluster's, its size is fixed, or its minimum already covers ``most``."""
    with lock:
        size = slurm_size(client)
        if size is None or size[0] != "adapt" or size[1][0] >= most:
            return None
        admin = check_sizing(None, slurm_settings().get("adapt"))
        want = most if admin is None else min(most, admin[1])
        before, asked_in = size[1], made["asked_in"]
        _size(None, (want, max(before[1], want)), RUN_SIZE)

    def give_back() -> None:
        with lock:
            if made.get("client") is client:  # not closed (or replaced) meanwhile
                _size(None, tuple(before), asked_in)

    return want, give_back


def _kept(settings: dict[str, Any]):
    """The client of the user's kept cluster (cluster/slurm/_keeper.py), and whether its keeper was started
    now; a cluster a previous kernel sized keeps that size."""
    from ._keeper import kept_client

    client, started = kept_client(settings)
    made.update(kept=True, client=client)
    if not started:
        made["size"], made["asked_in"] = client.run_on_scheduler(_size_here)
    return client, started


def _size(workers: int | None, adapt: tuple[int, int] | None, asked_in: str) -> None:
    """Size this kernel's cluster, in this process or, for a kept one, in its keeper's."""
    if made.get("kept"):
        made["size"], made["asked_in"] = made["client"].run_on_scheduler(
            _size_here, workers, list(adapt) if adapt else None, asked_in
        )
    else:
        _size_here(workers, adapt, asked_in)


def _size_here(
    workers: int | None = None, adapt: Any = None, asked_in: str | None = None
) -> tuple[tuple[str, Any] | None, str | None]:
    """Size the cluster this process holds (given nothing, just say its size): adaptive even for a fixed size,
    so a worker retired at its lifetime (or whose job Slurm ended) is replaced."""
    if asked_in is not None:
        cluster = made["cluster"]
        low, high = tuple(adapt) if adapt is not None else (workers, workers)
        if high == 0:
            cluster.scale(0)
        else:
            cluster.adapt(minimum=low, maximum=high)
        made["size"] = ("adapt", (low, high)) if adapt is not None else ("workers", workers)
        made["asked_in"] = asked_in
    return made.get("size"), made.get("asked_in")


def slurm_cluster():
    """This kernel's Slurm cluster object, or None when it has made none."""
    return made.get("cluster")


def slurm_size(client=None) -> tuple[str, Any] | None:
    """("adapt", (minimum, maximum)) or ("workers", n); None when this kernel made no Slurm cluster (or
    ``client`` is not its)."""
    if client is not None and client is not made.get("client"):
        return None
    return made.get("size")


def slurm_adapt(client=None) -> tuple[int, int] | None:
    """The (minimum, maximum) workers this kernel's Slurm cluster keeps between (a fixed size n is (n, n))."""
    size = slurm_size(client)
    if size is None:
        return None
    return size[1] if size[0] == "adapt" else (size[1], size[1])


def why_no_workers(client) -> str | None:
    """Why this kernel's Slurm cluster has no worker yet, in Slurm's words: refused jobs, pending jobs (and
    squeue's reason), or running jobs whose workers never reached the scheduler (the network interface)."""
    if slurm_size(client) is None:
        return None
    if made.get("kept"):
        return made["client"].run_on_scheduler(why_here)
    return why_here()


def describe_size(client=None) -> str | None:
    span = slurm_adapt(client)
    if span is None:
        return None
    return f"adapting between {span[0]} and {span[1]} worker jobs"


def close_slurm_cluster() -> None:
    """Close this kernel's Slurm cluster: its worker jobs are cancelled (scancel); a kept one is left to its
    keeper (this kernel's client alone is closed)."""
    close_made(made, lock)
