"""Trials that run as several ranks at once (data-parallel jobs): where the ranks go, how their outcomes combine
into the trial's, and what happens when one of them leaves the job.

Dask does not gang-schedule, so ranks are placed by hand: one task per rank, each pinned to a distinct worker
(two ranks in one process would share torch.distributed's one default process group and deadlock), on workers
that have the resources asked for. Rank 0's worker picks a free port for the rendezvous, fresh for every trial,
so re-running a cell never clashes with the last run's port.
"""

from __future__ import annotations

import dataclasses
import socket
import time
import uuid
from collections.abc import Container

from ..errors import PlacementError
from ..protocol import ErrorKind, Outcome, RankInfo, TrialState, how_many_fit
from ._elastic import Waiting
from ._seams import RunningTrial
from ._task_trial import task_error

# How long the other ranks of a data-parallel trial get to end once one of them left the job early.
RANK_GRACE = 3.0


def _free_port() -> int:
    """Runs on rank 0's worker: a port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def eligible_workers(client, resources: dict[str, float] | None) -> list[str]:
    """Addresses of the workers that have ``resources`` (all of them when None), in a stable order."""
    return eligible(client.scheduler_info(n_workers=-1)["workers"], resources)


def eligible(workers: dict[str, dict], resources: dict[str, float] | None) -> list[str]:
    """Those of ``workers`` (address -> the scheduler's info) that have ``resources``, in a stable order."""
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


def trials_that_fit(workers: dict[str, dict], resources: dict[str, float]) -> int:
    """How many single-task trials each needing ``resources`` the workers can run at once (each worker: its
    threads, at most as many as its declared resources cover); a PlacementError when none can."""
    fits = sum(
        min(
            info.get("nthreads", 1),
            *(how_many_fit(info.get("resources", {}).get(k, 0), v) for k, v in resources.items()),
        )
        for info in workers.values()
    )
    if fits == 0:
        need = " and ".join(f"{amount:g} {name}" for name, amount in resources.items())
        declare = ",".join(f"{name}={amount:g}" for name, amount in resources.items())
        raise PlacementError(
            f"a trial needs {need}; none of the cluster's {len(workers)} workers declares that much. Start "
            f"workers that do (dask worker --resources {declare}, or the cluster's worker resources) or ask for "
            "fewer."
        )
    return fits


def rendezvous(client, workers: list[str], trial_id: int) -> list[RankInfo]:
    """Each rank's view of the job: its rank, the world size, rank 0's host and a free port there."""
    from distributed.comm import get_address_host

    port = client.run(_free_port, workers=[workers[0]])[workers[0]]
    host = get_address_host(workers[0])
    attempt = f"{trial_id}-{uuid.uuid4().hex[:8]}"
    return [RankInfo(r, len(workers), host, port, attempt) for r in range(len(workers))]


class GangTrial(RunningTrial):
    """The ranks of one running data-parallel trial, settled once every rank has an outcome.

    It decides; the launcher, which keeps the rank tasks, acts: it tells the peers of a rank that failed to stop,
    cancels the tasks of ranks given up on, and restarts their workers.
    """

    def __init__(self, trial_id: int, workers: list[str]) -> None:
        super().__init__(trial_id)
        self.workers = workers  # rank -> its worker
        self.attempt: str | None = None  # the current group of ranks' attempt id (RankInfo.attempt)
        # Monotonic time a rank first ended without completing (failed, pruned, stopped) or lost its worker: the
        # others cannot get past their next collective without it.
        self.ending_since: float | None = None
        self.outcomes: dict[int, Outcome] = {}  # rank -> outcome, from its task's result
        self.reported: dict[int, Outcome] = {}  # rank -> outcome event, which comes ahead of the task
        # An elastic job (trials/_elastic.py) between two groups of ranks, and how many times in a row it
        # regrouped from the same checkpoint.
        self.waiting: Waiting | None = None
        self.fruitless = 0
        self.regrouped_from: int | None = None
        self.grow_asked = False

    def regroup(self, workers: list[str], attempt: str) -> None:
        """The job starts again on ``workers``: a new group of ranks, nothing of the last one's kept."""
        self.workers, self.attempt = workers, attempt
        self.ending_since = None
        self.outcomes, self.reported = {}, {}
        self.waiting = None
        self.grow_asked = False

    def lost_ranks(self) -> dict[int, str]:
        """The ranks whose worker left the cluster or whose task Dask lost (rank -> its worker): the job cannot
        go on with them, though it could without them."""
        return {
            rank: self.workers[rank]
            for rank, outcome in self.outcomes.items()
            if outcome.worker_lost or outcome.error_kind is ErrorKind.LOST
        }

    def unfinished(self) -> list[int]:
        return [rank for rank in range(len(self.workers)) if rank not in self.outcomes]

    def _rank_left(self) -> None:
        if self.ending_since is None:
            self.ending_since = time.monotonic()

    def rank_reported(self, outcome: Outcome) -> bool:
        """A rank's outcome event, which comes ahead of its task's end. True when the rank failed: its peers
        cannot get past their next collective without it, so they must be told to stop (their next report()
        stops them, or, blocked in a collective, they are given up on after RANK_GRACE: stragglers())."""
        self.reported[outcome.rank] = outcome
        if outcome.state is TrialState.COMPLETED:
            return False
        self._rank_left()
        return outcome.state is TrialState.FAILED

    def rank_ended(self, rank: int, task) -> bool:
        """A rank's task ended. True when it failed on Dask itself: its peers must be told to stop."""
        if rank in self.outcomes:
            return False  # already settled: its worker left
        if task.status == "finished":
            self.outcomes[rank] = outcome = task.result()
            if outcome.state is not TrialState.COMPLETED:
                self._rank_left()
        elif task.status in ("error", "cancelled"):
            self.outcomes[rank] = Outcome.lost(
                self.trial_id, TrialState.FAILED, task_error(task), ErrorKind.LOST, rank
            )
            self._rank_left()
            return True
        return False

    def left_cluster(self, present: Container[str]) -> list[int]:
        """The unfinished ranks whose worker is not among ``present`` (killed, out of memory): their tasks would
        wait for it forever, as Dask does not fail a task whose only allowed worker is gone. They are settled
        here; cancelling their tasks and stopping their peers is the launcher's."""
        lost = [rank for rank in self.unfinished() if self.workers[rank] not in present]
        for rank in lost:
            self.outcomes[rank] = self.reported.get(rank) or dataclasses.replace(
                Outcome.lost(
                    self.trial_id,
                    TrialState.FAILED,
                    f"rank {rank}'s worker {self.workers[rank]} left the cluster",
                    ErrorKind.LOST,
                    rank,
                ),
                worker_lost=True,
            )
        if lost:
            self._rank_left()
        return lost

    def stragglers(self, now: float) -> list[int]:
        """The ranks given up on: those that have not ended RANK_GRACE after a peer left the job. They may be
        stuck in a collective the peer will never join (gloo wakes them only when the peer's process group is
        freed and its sockets close, which a DDP model kept alive prevents; aborting either side's process group
        does not, measured with torch 2.13; else torch's 30-minute timeout), or their pinned task may wait for a
        worker that died. A cancelled task does not stop a running thread; a restart does, as torchrun restarts
        a worker group when one of its workers fails: the launcher cancels their tasks and restarts their
        workers."""
        if self.ending_since is None or now - self.ending_since < RANK_GRACE:
            return []
        stuck = self.unfinished()
        for rank in stuck:
            # An outcome event that came without its task ending (a slow clean-up) still tells how it went.
            self.outcomes[rank] = self.reported.get(rank) or Outcome.lost(
                self.trial_id,
                TrialState.FAILED,
                f"rank {rank} did not end within {RANK_GRACE:.0f}s of a peer leaving the job",
                ErrorKind.ABANDONED,
                rank,
            )
        return stuck

    def merged(self) -> Outcome | None:
        """The trial's outcome, once every rank has one."""
        if self.unfinished():
            return None
        return merge_outcomes(self.outcomes, len(self.workers), stopped=self.told_to_stop)


def merge_outcomes(outcomes: dict[int, Outcome], world: int, stopped: bool) -> Outcome:
    """The trial's outcome from its ranks': rank 0's, unless a rank failed; then the first rank that failed
    (by when it raised: the others usually fail because it left) gives the state and the traceback."""
    main = outcomes.get(0)
    failed = [o for o in outcomes.values() if o.state is TrialState.FAILED]
    pruned = any(o.state is TrialState.PRUNED for o in outcomes.values())
    if stopped and pruned:  # ranks leave at different steps when told to stop: the ones left behind then fail
        failed = []
    if main is not None:
        merged = dataclasses.replace(main)
    else:
        merged = dataclasses.replace(next(iter(outcomes.values())), returned=None, result=None)
    if failed:

        def ended(outcome: Outcome) -> float:
            if outcome.failed_at:
                return outcome.failed_at
            return (outcome.started or float("inf")) + (outcome.duration or 0)

        # A lost worker is a cause, never a consequence; among the others, the earliest to raise.
        first = min(failed, key=lambda o: (not o.worker_lost, ended(o)))
        merged.state = TrialState.FAILED
        merged.error = f"rank {first.rank} of {world} failed:\n{first.error}"
        merged.error_kind = first.error_kind
    elif pruned:
        merged.state = TrialState.PRUNED
    merged.rank_results = [outcomes[r].result if r in outcomes else None for r in range(world)]
    return merged
