"""Where the Dask launcher's trials may go: what the cluster can run, and the books of its workers.

The launcher (trials/_launcher.py) asks this before it submits anything, and tells it when a trial has ended. The
books: the workers that just freed a slot (``freed``: the outcome event reaches the kernel before Dask has marked
the task done, so a plain submit could land behind a long trial on a busy worker), the trials queued ahead on a
worker and where (``waiting``, ``ran_on``), the workers of our running data-parallel trials (``busy``), and the
single trials submitted with a worker hint (``pinned``). Nothing here submits or cancels a task.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Sequence

from ..cluster._current import adaptive_maximum, kept_span, workers_refused, workers_specified
from ..errors import ClusterError, PlacementError
from ._cpus import trials_by_threads
from ._elastic import Elastic
from ._gang import check_placement, eligible_workers, trials_that_fit
from ._gpu_types import of_types

# How often the cluster's workers are listed while data-parallel trials run (to notice one that left).
WORKER_CHECK = 1.0
# How long a data-parallel trial waits for enough workers when none of ours is running (a restarted worker
# coming back, an adaptive cluster scaling up) before the run fails with a PlacementError.
WORKER_WAIT = 30.0
# How long the start of a data-parallel run waits for the ranks' workers a gateway cluster is starting for it.
WORKERS_COMING_S = 120.0
# How many of the workers that freed a slot last are worth a hint (older ones have most likely been taken).
FREED_KEPT = 16


class Placement:
    """The workers of ``client``'s cluster as one run's trials see them: each trial of ``ranks`` tasks (None: one
    task) needing ``resources`` and ``cpus`` cores; ``elastic`` data-parallel trials may start with fewer ranks."""

    def __init__(
        self,
        client,
        ranks: int | None,
        resources: dict[str, float] | None,
        cpus: int | None,
        elastic: Elastic | None,
        gpu_types: Sequence[str] | None = None,
    ) -> None:
        self.client = client
        self.gpu_types = gpu_types  # several GPU types the trials take turns at: only their workers count
        self.ranks = ranks
        self.resources = resources
        self.cpus = cpus
        self.elastic = elastic
        # Workers that just finished a trial, the latest last: the next single trial is hinted to one of them.
        self.freed: list[str] = []
        # Where trials queued ahead wait (trial id -> worker), and the workers to queue them on: those that ended
        # a trial of ours, the latest last.
        self.waiting: dict[int, str] = {}
        self.ran_on: list[str] = []
        self.busy: set[str] = set()  # workers of our running data-parallel trials
        # Single trials submitted with a freed-worker hint: trial id -> that worker.
        self.pinned: dict[int, str] = {}
        self.short_of_workers_since: float | None = None
        # When a data-parallel trial last waited for workers to be placed: a job does not grow onto workers that
        # another trial of the run is waiting for (trials/_gang_jobs.py).
        self.wanted_at = 0.0
        self._present: tuple[float, dict[str, dict]] = (0.0, {})

    # --- before the run ----------------------------------------------------------------------------------
    def capacity(self) -> int:
        """How many trials the cluster can run at once: its worker threads, or (for trials of several ranks)
        how many jobs fit, or (for trials that need resources, gpus_per_trial=) how many the workers' declared
        resources allow; a PlacementError saying what is needed when none fits."""
        if self.ranks:
            self._wait_for_coming_workers()
            if self.elastic is not None:  # it may start with fewer, down to its minimum
                check_placement(self.client, self.elastic.min_ranks, self.resources)
                return max(1, len(eligible_workers(self.client, self.resources)) // self.ranks)
            return check_placement(self.client, self.ranks, self.resources)
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if self.resources:
            return trials_that_fit(of_types(workers, self.gpu_types), self.resources)
        return trials_by_threads(workers, self.cpus)

    def _wait_for_coming_workers(self) -> None:
        """A cluster that keeps a trial's ranks may still be starting them: a gateway or Slurm cluster whose
        minimum covers them (cluster/_growth.py), or a cluster object whose spec has that many workers, some
        restarting (the embedded cluster right after a run restarted its stuck ranks' workers). Wait for them (up
        to WORKERS_COMING_S) rather than refuse a run they are coming for; a ClusterError as soon as the cluster
        says it cannot start them (Slurm refused a worker job)."""
        assert self.ranks is not None  # (a data-parallel run's placement)
        span = kept_span(self.client)
        coming = span[0] if span is not None else workers_specified(self.client)
        if coming is None or coming < self.ranks:
            return
        deadline = time.monotonic() + WORKERS_COMING_S
        while time.monotonic() < deadline:
            refused = workers_refused(self.client)
            if refused:
                raise ClusterError(refused)
            try:
                self.client.wait_for_workers(self.ranks, timeout=1)
                return
            except TimeoutError:
                pass  # check_placement says how many came

    def capacity_to_fill(self) -> int:
        """How many single-task trials to keep in flight when the user fixed no number: the cluster's threads
        now, and for an adaptive cluster its threads at full size, so that the queued trials are what makes it
        grow. Re-read as the run goes, so a cluster that grows (or is scaled up) is used as it grows."""
        if self.client.status != "running":
            # Cut off from the scheduler: asking would block until Dask's reconnect gives up and closes the
            # client, past the launcher's lost(); the loop keeps its last figure meanwhile.
            raise ConnectionError("the client is cut off from the scheduler")
        if self.resources:  # what the declared resources allow (Dask holds back the rest anyway)
            return self.capacity()
        # A client that lost its scheduler answers {}: 1 then, and the launcher's lost() says what happened.
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        threads = sum(w.get("nthreads", 1) for w in workers.values())
        maximum = adaptive_maximum(self.client)
        if maximum is not None:
            per_worker = max((w.get("nthreads", 1) for w in workers.values()), default=1)
            threads = max(threads, maximum * per_worker)
        return max(1, threads // (self.cpus or 1))

    # --- where a trial goes ------------------------------------------------------------------------------
    def for_single(self, trial_id: int, behind: int) -> list[str] | None:
        """A single-task trial goes anywhere (a just-freed worker preferred), or, queued ahead (``behind``), to
        wait on the latest worker to end a trial of ours that has fewer than ``behind`` waiting per trial it runs
        at once (its threads): every worker gets its share of the queue (Dask, with work stealing off, would not
        move a queued trial to a worker that has run out)."""
        if not behind:
            return [self.freed.pop()] if self.freed else []
        waiting = Counter(self.waiting.values())
        worker = next((w for w in reversed(self.ran_on) if waiting[w] < behind * self._slots(w)), None)
        if worker is None:
            return None
        self.waiting[trial_id] = worker
        return [worker]

    def for_ranks(self) -> list[str] | None:
        """A data-parallel trial needs ``ranks`` of our free workers (an elastic one at least its minimum), and
        waits (None) until there are."""
        assert self.ranks is not None  # (a data-parallel run's placement)
        free = self.free_workers(eligible_workers(self.client, self.resources))
        least = self.ranks if self.elastic is None else self.elastic.min_ranks
        if len(free) >= least:
            self.short_of_workers_since = None
            return free[: self.ranks]
        self.wanted_at = time.monotonic()
        if not self.busy:
            # None of our trials runs, so none will free a worker: the cluster shrank (a worker lost, an adaptive
            # cluster scaling down, a restarted worker not back yet). Wait a while, then say so.
            now = time.monotonic()
            self.short_of_workers_since = self.short_of_workers_since or now
            if now - self.short_of_workers_since > WORKER_WAIT:
                # A PlacementError saying what is needed and what is there (no waiting: the loop runs here).
                check_placement(self.client, self.ranks, self.resources)
        return None

    def free_workers(self, workers) -> list[str]:
        """Those of ``workers`` that none of our data-parallel trials runs on."""
        return [w for w in workers if w not in self.busy]

    def single_ended(self, worker: str) -> int | None:
        """A single-task trial ended on ``worker``: the trial that waited behind it there begins now (Dask runs a
        worker's tasks in the order they came), or else the worker is free for the next trial."""
        if worker in self.ran_on:
            self.ran_on.remove(worker)
        self.ran_on.append(worker)
        began = next((t for t, w in self.waiting.items() if w == worker), None)
        if began is not None:
            del self.waiting[began]  # it runs there now: the slot is not free
        else:
            # A hint for the next trial; not when a queued trial took the slot (at a run's end, when no more
            # trials are queued, a trial hinted there waited behind it while other workers had nothing left:
            # 1,000 one-second trials on 32 workers ran a second longer).
            self.freed.append(worker)
            del self.freed[:-FREED_KEPT]
        return began

    # --- the workers there -------------------------------------------------------------------------------
    def present_workers(self, fresh: bool = False) -> dict[str, dict]:
        """The cluster's workers (address -> what the scheduler says of it), listed at most every WORKER_CHECK
        seconds (``fresh``: now)."""
        listed_at, present = self._present
        now = time.monotonic()
        if fresh or now - listed_at >= WORKER_CHECK:
            # A client cut off from its scheduler answers {} (the launcher's lost() says what happened).
            present = self.client.scheduler_info(n_workers=-1).get("workers", {})
            self._present = (now, present)
        return present

    def _known_workers(self) -> dict[str, dict]:
        """present_workers(), or, while the client is cut off from the scheduler, the last listing (asking would
        block until Dask's reconnect gives up)."""
        return self.present_workers() if self.client.status == "running" else self._present[1]

    def queues_behind(self, parallel: int) -> bool:
        """Whether a trial queued ahead on a worker would wait there: only while the run's ``parallel`` trials
        take every slot of the cluster. With threads to spare (parallel= below them) Dask would start it at once,
        beyond ``parallel``. Never for data-parallel trials."""
        if self.ranks:
            return False
        present = self._known_workers()
        if not present:
            return False
        if self.resources:
            with contextlib.suppress(PlacementError):
                return parallel >= trials_that_fit(of_types(present, self.gpu_types), self.resources)
            return False
        return parallel >= trials_by_threads(present, self.cpus)

    def _slots(self, worker: str) -> int:
        """How many of our trials ``worker`` runs at once: its threads (per trial's cores); from the last listing
        while the client is cut off from the scheduler."""
        threads = self._known_workers().get(worker, {}).get("nthreads", 1)
        return max(1, threads // (self.cpus or 1))
