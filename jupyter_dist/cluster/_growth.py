"""A cluster grown for a run whose trials start several workers at once (data-parallel ranks), and given back
after it.

Adaptive scaling follows queued tasks, and a data-parallel trial's ranks are submitted only once every one of
them can start, so an adaptive cluster below the ranks would never grow for them. The run therefore asks the
cluster itself to keep its ranks for the run's duration (its adaptive minimum raised, the maximum with it),
waits for them, and puts the size back when the run ends. How it asks depends on who holds the cluster: this
kernel's gateway or Slurm cluster (_gateway.py, slurm/), a Dask cluster object the user passed (distributed's
``Cluster.adapt``, or a ``GatewayCluster``'s, whose adaptive state lives on its scheduler); a scheduler reached
only by its address cannot be grown from here, and the error says what to pass instead.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ClusterError, PlacementError
from . import _gateway, slurm
from ._gateway import CLIPPED

__all__ = ["WORKERS_COMING_S", "WorkersHeld", "hold_workers"]

# How long a run waits for the workers it asked the cluster for (a gateway pulling an image, Slurm's queue).
WORKERS_COMING_S = 120.0


@dataclass
class WorkersHeld:
    """The workers a run asked its cluster to keep (0: none asked), and how to give them back."""

    asked: int = 0
    give_back: Callable[[], None] | None = None

    def release(self) -> None:
        """Put the cluster's size back as it was before the run (once)."""
        give_back, self.give_back = self.give_back, None
        if give_back is not None:
            give_back()


def hold_workers(client, *, fewest: int, start: int, most: int, ranks: str) -> WorkersHeld:
    """Have ``client``'s cluster keep ``most`` workers for a run (within what its admin allows), and wait until
    ``start`` of them (the run's first trial's ranks; fewer when the cluster allows fewer) are there.

    ``fewest``: the fewest workers one trial can run on (an elastic job's minimum); an admin's limit below it is
    a ClusterError naming both numbers, as is a worker that does not come within WORKERS_COMING_S. ``ranks``:
    the trial's ranks in words, for the messages (e.g. "2 ranks"). A cluster reached only by its
    address, with too few workers, is a PlacementError saying it cannot be grown from here."""
    grown = _grow(client, most)
    if grown is None:
        _check_reachable_only(client, fewest, ranks)
        return WorkersHeld()
    granted, give_back, limit_words = grown
    held = WorkersHeld(granted, give_back)
    try:
        if granted < fewest:
            raise ClusterError(
                f"a data-parallel trial needs {fewest} workers at once ({ranks}), and {limit_words} allows this "
                f"cluster {granted}: ask for at most {granted} (or an elastic job, min_workers={granted}), or ask "
                "the admin to raise the limit"
            )
        _wait_for(client, min(start, granted), ranks)
    except BaseException:
        held.release()
        raise
    return held


def _grow(client, most: int) -> tuple[int, Callable[[], None], str] | None:
    """Raise the cluster's adaptive minimum to ``most``: the minimum granted, how to give it back, and what
    limits it (for the messages); None when the cluster is not adaptive, already keeps that many, or cannot be
    reached as a cluster (only an address)."""
    for ours, hold_for_run, limit_words in (
        (_gateway.gateway_size, _gateway.hold_for_run, _gateway.LIMIT_WORDS),
        (slurm.slurm_size, slurm.hold_for_run, slurm.LIMIT_WORDS),
    ):
        if ours(client) is not None:  # this kernel's cluster: None when fixed or large enough already
            grown = hold_for_run(client, most)
            return None if grown is None else (*grown, limit_words)
    cluster = getattr(client, "cluster", None)
    if cluster is None:
        return None
    if type(cluster).__module__.startswith("dask_gateway"):
        return _grow_gateway_object(client, cluster, most)
    return _grow_cluster_object(cluster, most)


def _grow_cluster_object(cluster, most: int) -> tuple[int, Callable[[], None], str] | None:
    """A Dask cluster object whose ``adapt()`` was called (LocalCluster, dask-jobqueue, dask-kubernetes...)."""
    adaptive = getattr(cluster, "_adaptive", None)  # what distributed's Cluster.adapt() started
    if adaptive is None or getattr(adaptive, "state", None) not in ("starting", "running"):
        return None  # a fixed size: the user's to change
    low, high = adaptive.minimum, adaptive.maximum
    if low >= most:
        return None
    kind = type(adaptive)
    # Cluster.adapt keeps the options given before (interval, target_duration...): only the bounds change.
    cluster.adapt(Adaptive=kind, minimum=most, maximum=max(high, most))
    return most, lambda: cluster.adapt(Adaptive=kind, minimum=low, maximum=high), "its adaptive maximum"


def _gateway_adaptive(dask_scheduler) -> tuple[bool, int | None, int | None]:
    """Runs on a gateway cluster's scheduler, where dask-gateway keeps its adaptive bounds."""
    service = dask_scheduler.services.get("gateway")
    if service is None:
        return False, None, None
    return service.adapt_task is not None, service.minimum, service.maximum


def _grow_gateway_object(client, cluster, most: int) -> tuple[int, Callable[[], None], str] | None:
    """A ``GatewayCluster`` the user made: its adaptive state is read from its scheduler, the bounds asked of
    the gateway (which clips them to its limit, saying so in a warning)."""
    active, low, high = client.run_on_scheduler(_gateway_adaptive)
    if not active or (low or 0) >= most:
        return None
    wanted = max(high if high is not None else math.inf, most)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cluster.adapt(minimum=most, maximum=None if wanted == math.inf else wanted)
    clipped = [int(found.group(1)) for w in said if (found := CLIPPED.search(str(w.message)))]
    granted = min([most, *clipped])
    return granted, lambda: cluster.adapt(minimum=low, maximum=high), _gateway.LIMIT_WORDS


def _wait_for(client, count: int, ranks: str) -> None:
    """Wait for ``count`` workers; a ClusterError as soon as the cluster says it cannot start them (Slurm
    refused a worker job), or once WORKERS_COMING_S have passed."""
    deadline = time.monotonic() + WORKERS_COMING_S
    while True:
        refused = slurm.refusal(client)
        if refused:
            raise ClusterError(refused)
        try:
            client.wait_for_workers(count, timeout=1)
            return
        except TimeoutError:
            if time.monotonic() >= deadline:
                break
    came = len(client.scheduler_info(n_workers=-1).get("workers", {}))
    why = slurm.why_no_workers(client) if slurm.slurm_size(client) is not None else None
    raise ClusterError(
        f"the run asked its cluster for {count} workers for a data-parallel trial's ranks ({ranks}) and "
        f"{came} came within {WORKERS_COMING_S:.0f}s" + (f": {why}" if why else "") + ". Run it again once "
        "the cluster can start them, or ask for fewer ranks"
    )


def _check_reachable_only(client, fewest: int, ranks: str) -> None:
    """A scheduler reached by its address alone (no cluster object): nothing here can start workers there."""
    if getattr(client, "cluster", None) is not None:
        return
    if _gateway.gateway_size(client) is not None or slurm.slurm_size(client) is not None:
        return
    present = len(client.scheduler_info(n_workers=-1).get("workers", {}))
    if present >= fewest:
        return
    address = getattr(client.scheduler, "address", "?")
    raise PlacementError(
        f"a data-parallel trial needs {fewest} workers at once ({ranks}); the cluster at {address} has "
        f"{present}, and jupyter_dist reached it only by its address, so it cannot ask it for more. Pass "
        "cluster= the cluster object itself (a GatewayCluster, SLURMCluster, KubeCluster...: an adaptive one "
        f"is grown for the run and given back after), or give it {fewest} workers yourself "
        f"(cluster.scale({fewest}), or `dask worker {address}`), or ask for fewer"
    )
