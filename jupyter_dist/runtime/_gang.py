"""Trials that run as several ranks at once (data-parallel jobs): where the ranks go and how their outcomes
combine into the trial's.

Dask does not gang-schedule, so ranks are placed by hand: one task per rank, each pinned to a distinct worker
(two ranks in one process would share torch.distributed's one default process group and deadlock), on workers
that have the resources asked for. Rank 0's worker picks a free port for the rendezvous, fresh for every trial,
so re-running a cell never clashes with the last run's port.
"""

from __future__ import annotations

import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any


class PlacementError(RuntimeError):
    """The cluster has too few workers (with the resources asked for) for one data-parallel trial."""


def _free_port() -> int:
    """Runs on rank 0's worker: a port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def eligible_workers(client, resources: dict[str, float] | None) -> list[str]:
    """Addresses of the workers that have ``resources`` (all of them when None), in a stable order."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return sorted(
        address
        for address, info in workers.items()
        if all(info.get("resources", {}).get(name, 0) >= amount for name, amount in (resources or {}).items())
    )


def check_placement(client, ranks: int, resources: dict[str, float] | None) -> int:
    """How many such trials fit at once; a PlacementError saying what was needed and found when none does."""
    found = eligible_workers(client, resources)
    if len(found) < ranks:
        total = len(client.scheduler_info(n_workers=-1)["workers"])
        need = " and ".join(f"{amount:g} {name}" for name, amount in (resources or {}).items())
        raise PlacementError(
            f"a data-parallel trial needs {ranks} workers{f' with {need} each' if need else ''}, one rank per "
            f"worker process; the cluster has {len(found)}"
            + (f" (of {total} workers)" if need else "")
            + ". Start more workers (e.g. %distribute_cluster local --workers N) or ask for fewer."
        )
    return len(found) // ranks


def rendezvous(client, workers: list[str], trial_id: int) -> list[dict[str, Any]]:
    """Each rank's view of the job: its rank, the world size, rank 0's host and a free port there."""
    from distributed.comm import get_address_host

    port = client.run(_free_port, workers=[workers[0]])[workers[0]]
    host = get_address_host(workers[0])
    # One attempt id for all ranks: their output belongs to one trial run, not to several attempts of it.
    attempt = f"{trial_id}-{uuid.uuid4().hex[:8]}"
    return [
        {"rank": r, "world": len(workers), "host": host, "port": port, "attempt": attempt}
        for r in range(len(workers))
    ]


@dataclass
class Gang:
    """The rank tasks of one running trial."""

    workers: list[str]
    futures: list[Any]
    # Monotonic time a rank first ended without completing (failed, pruned, stopped) or lost its worker: the
    # others cannot get past their next collective without it.
    ending_since: float | None = None
    outcomes: dict[int, dict] = field(default_factory=dict)  # rank -> outcome, from its task's result
    reported: dict[int, dict] = field(default_factory=dict)  # rank -> outcome event, which comes ahead of it

    def rank_ended_early(self) -> None:
        if self.ending_since is None:
            self.ending_since = time.monotonic()

    def unfinished(self) -> list[int]:
        return [rank for rank in range(len(self.futures)) if rank not in self.outcomes]


def merge_outcomes(outcomes: dict[int, dict], world: int, stopped: bool) -> dict:
    """The trial's outcome from its ranks': rank 0's, unless a rank failed; then the first rank that failed
    (by when it raised: the others usually fail because it left) gives the state and the traceback."""
    main = outcomes.get(0)
    failed = [o for o in outcomes.values() if o["state"] == "failed"]
    pruned = any(o["state"] == "pruned" for o in outcomes.values())
    if stopped and pruned:  # ranks leave at different steps when told to stop: the ones left behind then fail
        failed = []
    merged = dict(main) if main is not None else dict(next(iter(outcomes.values())))
    if main is None:
        merged.update(returned=None, result=None)
    if failed:

        def ended(outcome: dict) -> float:
            if outcome.get("failed_at"):
                return outcome["failed_at"]
            return (outcome["started"] or float("inf")) + (outcome["duration"] or 0)

        # A lost worker is a cause, never a consequence; among the others, the earliest to raise.
        first = min(failed, key=lambda o: (not o.get("worker_lost"), ended(o)))
        merged.update(state="failed", error=f"rank {first['rank']} of {world} failed:\n{first['error']}")
    elif pruned:
        merged["state"] = "pruned"
    merged["results"] = [outcomes.get(r, {}).get("result") for r in range(world)]
    return merged
