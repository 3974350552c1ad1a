"""Trials on Dask: the launcher the trial loop runs them through.

It ships the training function, submits one task per trial (or one pinned task per rank), subscribes to the
experiment's event topic, passes stop requests to the workers, and keeps its trials' tasks: it decides from what
arrives when a trial has ended (with the trial's own bookkeeping: _task_trial.py, _gang.py), cancels, re-submits
and releases them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import cloudpickle

from ..cluster._current import adaptive_maximum, kept_span, workers_refused
from ..errors import ClusterError, PlacementError
from ..protocol import (
    CheckpointEvent,
    CheckpointPlan,
    ErrorKind,
    LogLine,
    Outcome,
    RankInfo,
    Regrouped,
    ReportBatch,
    TrialState,
    TrialTask,
)
from ._by_reference import Shipment, scatter_threshold
from ._channel import EventChannel, clear_stops_on_workers, clear_trial_on_workers, stop_on_workers
from ._cpus import CPU, declares_cpus, trials_by_threads
from ._elastic import (
    FRUITLESS_REGROUPS,
    Elastic,
    Waiting,
    ask_to_regroup,
    below_minimum,
    how_to_go_on,
    why_lost,
)
from ._first_task import load_on_a_worker
from ._gang import GangTrial, check_placement, eligible, eligible_workers, rendezvous, trials_that_fit
from ._loop import RunningTrial, TaskEnded, TrialSpec
from ._outbox import FRESH, RELAXED
from ._runner import run_trial
from ._task_trial import Retries, TaskTrial

# How long restarting the workers of ranks given up on may take.
RESTART_TIMEOUT = 30.0
# How often the cluster's workers are listed while data-parallel trials run (to notice one that left).
WORKER_CHECK = 1.0
# How long a data-parallel trial waits for enough workers when none of ours is running (a restarted worker
# coming back, an adaptive cluster scaling up) before the run fails with a PlacementError.
WORKER_WAIT = 30.0
# How long the start of a data-parallel run waits for the ranks' workers a gateway cluster is starting for it.
WORKERS_COMING_S = 120.0
# How long the end of a run waits for tasks whose outcome already arrived (normally a few ms behind it).
SETTLE_WAIT = 2.0
# The client cut off from the scheduler this long: the cluster is gone (Dask's client keeps trying to reconnect).
SCHEDULER_LOST = 5.0

# A pickled function this large is dropped from the workers' memory when its run ends (trials/_by_reference.py).
LARGE_FUNCTION = 2**20

# (scheduler address, hash of the pickled function) pairs whose function loaded on that cluster's workers.
_loadable: set[tuple[str, str]] = set()


class DaskLauncher:
    """Runs an experiment's trials of ``fn`` on ``client``'s cluster.

    ``ranks=k``: every trial is a data-parallel job of k rank tasks on k distinct workers having ``resources``.
    ``checkpoints``: where the trials' ``jupyter_dist.checkpoint()`` calls save.
    ``decides_on_reports``: whether the kernel decides on every report (a pruner); otherwise reports only feed
    the views and the store, and may wait a little on the worker to travel together (cheaper for both).
    ``max_failures``: how many more times a single-task trial whose function raised runs again (``Retries``);
    ``on_retry(outcome, why)`` hears of each such failed attempt. ``cpus``: cores per trial (trials/_cpus.py).
    ``elastic``: data-parallel trials go on at another size when they lose workers or more come
    (trials/_elastic.py); ``on_regroup(Regrouped)`` hears of each time one does.
    """

    def __init__(
        self,
        client,
        fn: Callable,
        exp_id: str,
        *,
        ranks: int | None = None,
        resources: dict[str, float] | None = None,
        checkpoints: CheckpointPlan | None = None,
        decides_on_reports: bool = True,
        max_failures: int = 0,
        cpus: int | None = None,
        elastic: Elastic | None = None,
    ) -> None:
        self.client = client
        self._scheduler_address = getattr(getattr(client, "scheduler", None), "address", None)
        self.report_wait = FRESH if decides_on_reports else RELAXED
        self.checkpoints = checkpoints
        self.exp_id = exp_id
        self.topic = f"jupyter_dist-{exp_id}"
        self.ranks = ranks
        self.resources = resources
        self.cpus = cpus
        if cpus and declares_cpus(client.scheduler_info(n_workers=-1)["workers"]):
            self.resources = {**(resources or {}), CPU: cpus}
        self.retries = Retries(max_failures)
        self.on_retry: Callable[[Outcome, str], None] | None = None
        # What this run puts on the cluster once (with_parameters' objects, a large function), released at its end.
        self.shipment = Shipment(client)
        with self.shipment.shipping():
            blob = cloudpickle.dumps(fn)
        self._fn_key = (exp_id, hashlib.sha1(blob).hexdigest())  # how workers keep it, unpickled
        # Sent with every task, or (above the threshold) only its key: each worker then fetches it once.
        self._fn_size = len(blob)
        self._fn_blob: bytes | str = blob if len(blob) <= scatter_threshold() else self.shipment.put(blob)
        self._released = False
        # Single-task trials running now: trial id -> spec, to run one again (max_failures) or elsewhere.
        self._specs: dict[int, TrialSpec] = {}
        # Workers that just finished a trial. The outcome event reaches us before the Dask scheduler has marked
        # the task done, so a plain submit could land behind a long trial on a busy worker: name the free one.
        self._freed: list[str] = []
        # Where trials queued ahead wait (trial id -> worker), and the workers to queue them on: those that ended
        # a trial of ours, the latest last.
        self._waiting: dict[int, str] = {}
        self._ran_on: list[str] = []
        self._busy: set[str] = set()  # workers of our running data-parallel trials
        self._short_of_workers_since: float | None = None
        # Futures of trials whose outcome has arrived but whose task has not ended yet: released once it has
        # (releasing a running task would cancel it noisily on its worker).
        self._lingering: list = []
        self._present: tuple[float, dict[str, dict]] = (0.0, {})
        self._disconnected_since: float | None = None
        # The tasks of our running trials, by rank (one for a single-task trial): ours to cancel, re-submit and
        # release; a task ending that is not among them any more (re-submitted) is ignored.
        self._tasks: dict[int, list] = {}
        # Single trials submitted with a freed-worker hint: trial id -> that worker.
        self._pinned: dict[int, str] = {}
        self.elastic = elastic if ranks else None
        self.on_regroup: Callable[[Regrouped], None] | None = None
        # Each data-parallel trial's newest checkpoint step (from its checkpoint events): where it would go on from.
        self._saved: dict[int, int] = {}
        self._notify: Callable[[TaskEnded], None] | None = None
        # The running data-parallel trials, and what each was started with: a job regroups as the same trial.
        self._gangs: dict[int, GangTrial] = {}
        self._gang_specs: dict[int, TrialSpec] = {}
        # When a data-parallel trial last waited for workers to be placed: a job does not grow onto workers that
        # another trial of the run is waiting for.
        self._wanted_at = 0.0

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
            return trials_that_fit(workers, self.resources)
        return trials_by_threads(workers, self.cpus)

    def _wait_for_coming_workers(self) -> None:
        """A gateway or Slurm cluster that keeps a trial's ranks as its minimum (cluster/_sizing.py) may still be
        starting them: wait for them (up to WORKERS_COMING_S), rather than refuse a run they are coming for; a
        ClusterError as soon as the cluster says it cannot start them (Slurm refused a worker job)."""
        span = kept_span(self.client)
        if span is None or span[0] < self.ranks:
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

    def check_function(self, timeout: float = 60.0) -> None:
        """Load the training function on a worker once, so an unimportable module fails fast and clearly.

        A function already loaded on this cluster (same bytes) is not probed again: re-running a cell costs no
        extra round trip.
        """
        probe_key = (self.client.scheduler.address, self._fn_key[1])
        if probe_key in _loadable:
            return
        load_on_a_worker(
            self.client, self._fn_key, self._fn_blob, f"jupyter_dist-probe-{self.exp_id}", timeout
        )
        _loadable.add(probe_key)

    # --- the TrialLauncher interface ---------------------------------------------------------------------
    def events(
        self,
        on_reports: Callable[[ReportBatch], None],
        on_log: Callable[[LogLine], None],
        on_checkpoint: Callable[[CheckpointEvent], None],
        on_outcome: Callable[[Outcome], None],
    ) -> AbstractContextManager:
        stack = ExitStack()
        stack.callback(self.release)  # last out: once nothing of the run is listening any more
        if self.ranks:
            checkpointed = on_checkpoint

            def on_checkpoint(event: CheckpointEvent) -> None:
                self._saved[event.trial_id] = event.step  # the newest: a job regroups from it
                checkpointed(event)

        stack.enter_context(
            EventChannel(self.client, self.topic, on_reports, on_log, on_checkpoint, on_outcome)
        )
        return stack

    def release(self) -> None:
        """Let go of what the run put on the cluster (its data leaves it); safe to call again. A large function
        is forgotten on the workers too, even when it travelled with every task (the threshold turned off): each
        worker would otherwise keep it, data and all, for KEPT_EXPERIMENTS runs."""
        if self._released:
            return
        self._released = True
        large = bool(self.shipment.futures) or self._fn_size > LARGE_FUNCTION
        self.shipment.release(self._fn_key if large else None)

    def place(self, trial_id: int, behind: int = 0) -> list[str] | None:
        """Single-task trials go anywhere (a just-freed worker preferred), or, queued ahead (``behind``), to wait
        on the latest worker to end a trial of ours that has fewer than ``behind`` waiting per trial it runs at
        once (its threads): every worker gets its share of the queue (Dask, with work stealing off, would not
        move a queued trial to a worker that has run out). A data-parallel trial needs ``ranks`` of our free
        workers, and waits (None) until there are; it is never queued."""
        if behind:
            if self.ranks:
                return None
            waiting = Counter(self._waiting.values())
            worker = next((w for w in reversed(self._ran_on) if waiting[w] < behind * self._slots(w)), None)
            if worker is None:
                return None
            self._waiting[trial_id] = worker
            return [worker]
        if not self.ranks:
            return [self._freed.pop()] if self._freed else []
        if self._regrouping():
            return None  # a job waiting for workers to go on has them first
        free = self._free_workers(eligible_workers(self.client, self.resources))
        least = self.ranks if self.elastic is None else self.elastic.min_ranks
        if len(free) >= least:
            self._short_of_workers_since = None
            return free[: self.ranks]
        self._wanted_at = time.monotonic()
        if not self._busy:
            # None of our trials runs, so none will free a worker: the cluster shrank (a worker lost, an adaptive
            # cluster scaling down, a restarted worker not back yet). Wait a while, then say so.
            now = time.monotonic()
            self._short_of_workers_since = self._short_of_workers_since or now
            if now - self._short_of_workers_since > WORKER_WAIT:
                # A PlacementError saying what is needed and what is there (no waiting: the loop runs here).
                check_placement(self.client, self.ranks, self.resources)
        return None

    def _free_workers(self, workers) -> list[str]:
        return [w for w in workers if w not in self._busy]

    def _regrouping(self) -> bool:
        return any(trial.waiting is not None for trial in self._gangs.values())

    def start(
        self, starts: list[tuple[TrialSpec, list[str]]], notify: Callable[[TaskEnded], None]
    ) -> list[RunningTrial]:
        """Submit the trials: single-task ones placed alike in one submission (``client.map``: one message to
        the scheduler and one graph update there for all, instead of one each), a data-parallel trial's ranks
        each pinned to its worker."""
        if self.ranks:
            self._notify = notify
            return [self._start_ranks(spec, placement, notify) for spec, placement in starts]
        alike: dict[tuple[str, ...], list[TrialSpec]] = {}
        for spec, placement in starts:
            alike.setdefault(tuple(placement), []).append(spec)
            self._specs[spec.trial_id] = spec  # its end is seen by poll(): notify is for data-parallel ranks
            if placement:
                self._pinned[spec.trial_id] = placement[0]
        trials: list[RunningTrial] = []
        # The pin is a hint (another worker may take the trial) unless the trials need resources: Dask's work
        # stealing moves a loosely pinned task to an idle worker without checking its resources, and a worker
        # handed a GPU trial it does not declare dies ("KeyError: 'GPU'" in its state machine). Strictly pinned,
        # a trial whose worker dies goes to "no-worker" and _unpin_orphans() submits it again, unpinned.
        loose = not self.resources
        for placement, specs in alike.items():
            hint = {"workers": list(placement), "allow_other_workers": loose} if placement else {}
            tasks = self._submit_all(
                [self._task(spec, None) for spec in specs],
                [f"trial-{spec.trial_id}" for spec in specs],
                **hint,
            )
            for spec, task in zip(specs, tasks, strict=True):
                self._tasks[spec.trial_id] = [task]  # its end is seen by poll(), not by a done-callback
                trials.append(TaskTrial(spec.trial_id))
        return trials

    def _start_ranks(
        self, spec: TrialSpec, placement: list[str], notify: Callable[[TaskEnded], None]
    ) -> RunningTrial:
        # A worker gone by now fails here, before any rank starts.
        attempt = self._submit_ranks(spec, placement, notify)
        trial = self._gangs[spec.trial_id] = GangTrial(spec.trial_id, placement)
        trial.attempt = attempt
        self._gang_specs[spec.trial_id] = spec
        return trial

    def _submit_ranks(
        self, spec: TrialSpec, placement: list[str], notify: Callable[[TaskEnded], None]
    ) -> str:
        """Submit one task per rank, each pinned to its worker; the group's attempt id."""
        ranks = rendezvous(self.client, placement, spec.trial_id)
        tasks = [
            self._submit(
                self._task(spec, rank),
                f"trial-{spec.trial_id}-rank-{rank.rank}-{rank.attempt}",
                workers=[worker],
                allow_other_workers=False,
            )
            for worker, rank in zip(placement, ranks, strict=True)
        ]
        self._busy.update(placement)
        self._tasks[spec.trial_id] = tasks
        for rank, task in enumerate(tasks):
            _on_end(task, spec.trial_id, rank, notify)
        return ranks[0].attempt

    def _task(self, spec: TrialSpec, rank: RankInfo | None) -> TrialTask:
        return TrialTask(
            self._fn_key,
            self._fn_blob,
            self.exp_id,
            spec.trial_id,
            spec.params,
            self.topic,
            rank,
            gpus=0 if rank is not None else (self.resources or {}).get("GPU", 0),
            cpus=None if rank is not None else self.cpus,
            checkpoint_dir=self._checkpoint_dir(spec),
            keep_checkpoints=self.checkpoints and self.checkpoints.keep,
            report_wait=self.report_wait,
            until_step=spec.until_step,
            elastic=self.elastic is not None and rank is not None,
        )

    def _submit(self, task: TrialTask, key: str, **placement: Any):
        (future,) = self._submit_all([task], [key], **placement)
        return future

    def _submit_all(self, tasks: list[TrialTask], keys: list[str], **placement: Any) -> list:
        """Submit trial tasks placed alike, in one message to the scheduler; the trials' resources asked for."""
        if self.resources:
            placement["resources"] = self.resources
        keys = [f"jupyter_dist-{self.exp_id}-{key}" for key in keys]
        if len(tasks) == 1:
            return [self.client.submit(run_trial, tasks[0], key=keys[0], pure=False, **placement)]
        return self.client.map(run_trial, tasks, key=keys, pure=False, **placement)

    def _checkpoint_dir(self, spec: TrialSpec) -> str | None:
        if self.checkpoints is None:
            return None
        return self.checkpoints.trial_directory(spec.trial_id if spec.continues is None else spec.continues)

    def forget_stops(self) -> None:
        """Before a resumed run: its workers may remember the experiment's last run being stopped."""
        clear_stops_on_workers(self.client, self.exp_id)

    def stop(self, trial_ids: list[int] | None) -> None:
        if self.client.status != "running":  # nothing to tell workers we cannot reach
            return
        if trial_ids and self.ranks:
            # A data-parallel trial's stop is for its group of ranks running now: sent without waiting, it may
            # reach a worker after an elastic job's next group began there (clearing it first does not order it).
            for trial_id in trial_ids:
                group = self._gangs.get(trial_id)
                stop_on_workers(self.client, self.exp_id, [trial_id], group.attempt if group else None)
            return
        stop_on_workers(self.client, self.exp_id, trial_ids)

    # --- deciding when a trial has ended -----------------------------------------------------------------
    def settle(self, trial: RunningTrial, event: Outcome | TaskEnded) -> Outcome | None:
        if isinstance(event, Outcome):
            if not isinstance(trial, GangTrial):
                return None if self._ran_again(trial, event) else event  # ~2 ms after the function returned
            if event.attempt != trial.attempt:
                return None  # a rank of the job's last group (an elastic job regrouped since)
            if trial.rank_reported(event):
                self.stop([trial.trial_id])
            return None
        tasks = self._tasks.get(trial.trial_id, [])
        if event.rank >= len(tasks) or event.task is not tasks[event.rank]:
            return None  # a task re-submitted since (_unpin_orphans): it is not the trial's any more
        if isinstance(trial, GangTrial):
            if trial.rank_ended(event.rank, event.task):
                self.stop([trial.trial_id])
            return self._ended_or_regrouped(trial, time.monotonic())
        return trial.task_ended(event.task)

    def poll(self, trial: RunningTrial, now: float) -> Outcome | None:
        if not isinstance(trial, GangTrial):
            # A single-task trial's task is looked at here rather than given a done-callback: Dask runs each
            # callback through a thread pool, two thread hand-offs per trial that cost the kernel ~0.1 ms each
            # (the outcome event normally says how it ended anyway).
            outcome = trial.poll(self._tasks[trial.trial_id][0], now)
            return None if outcome is not None and self._ran_again(trial, outcome) else outcome
        if trial.waiting is not None:
            return self._go_on(trial, now)
        # Once a rank has left the job (its peers' collectives fail at once when its process dies), whether its
        # worker is gone is asked afresh at every poll: the cached listing would add up to WORKER_CHECK to the
        # time a job takes to fail or, elastic, to go on.
        lost = trial.left_cluster(self.present_workers(fresh=trial.ending_since is not None))
        if lost:
            self._cancel(trial.trial_id, lost)
            self.stop([trial.trial_id])
        if trial.unfinished():
            self._maybe_grow(trial, now)
        outcome = self._ended_or_regrouped(trial, now)
        if outcome is not None or trial.waiting is not None:
            return outcome
        stuck = trial.stragglers(now)
        if not stuck:
            return None
        # Their threads outlive a cancel: a restart ends them (GangTrial.stragglers says why).
        self._cancel(trial.trial_id, stuck)
        self.restart([trial.workers[rank] for rank in stuck])
        return self._ended_or_regrouped(trial, now)

    # --- elastic data-parallel jobs (trials/_elastic.py) -------------------------------------------------
    def _ended_or_regrouped(self, trial: GangTrial, now: float) -> Outcome | None:
        """The job's outcome once every rank has ended; None while it runs, or when, elastic, it goes on at
        another size: it lost a worker (and has a checkpoint to go on from), or ended at a checkpoint to grow."""
        outcome = trial.merged()
        if outcome is None:
            return None
        lost = trial.lost_ranks()
        if not lost and not outcome.regroup:
            return outcome
        if trial.told_to_stop:  # the run is stopping: a job that ended at a checkpoint to grow was stopped
            if outcome.regroup and outcome.state is TrialState.COMPLETED:
                outcome.state = TrialState.PRUNED
            return outcome
        saved = self._saved.get(trial.trial_id)
        if self.elastic is None or saved is None:
            return how_to_go_on(outcome, self.elastic, saved is not None)
        if trial.regrouped_from == saved:
            trial.fruitless += 1
            if trial.fruitless >= FRUITLESS_REGROUPS:
                outcome.error = (
                    f"the job regrouped {trial.fruitless} times from its checkpoint of step {saved} without "
                    f"saving a newer one; it ended there (resume=True goes on from that checkpoint).\n\n"
                    f"{outcome.error or ''}"
                ).rstrip()
                return outcome
        else:
            trial.fruitless = 0
        why = why_lost(lost) if lost else "more workers are free"
        trial.waiting = Waiting(why, sorted(lost), len(trial.workers), saved, outcome)
        # What is left of the last group is done with: its workers are free for the next.
        self._busy.difference_update(trial.workers)
        self._lingering.extend(self._tasks.pop(trial.trial_id, []))
        return self._go_on(trial, now)

    def _go_on(self, trial: GangTrial, now: float) -> Outcome | None:
        """Start the job's next group on the free workers (as many as it may have), once there are at least its
        minimum; its final outcome if it waited for them longer than the elastic timeout."""
        waiting, elastic = trial.waiting, self.elastic
        if trial.told_to_stop:  # the run is stopping: the job ends as its last group did
            trial.waiting = None
            return waiting.ended
        free = self._free_workers(eligible_workers(self.client, self.resources))
        size = min(elastic.max_ranks, len(free))
        if size < elastic.min_ranks:
            if now - waiting.since > elastic.timeout:
                trial.waiting = None
                return below_minimum(waiting, elastic, len(free))
            return None
        spec = self._gang_specs[trial.trial_id]
        try:
            # The stop sent to the last group's ranks (and a regroup asked of it) must not stop the next one.
            clear_trial_on_workers(self.client, self.exp_id, trial.trial_id)
            attempt = self._submit_ranks(spec, free[:size], self._notify)
        except Exception as exc:
            # A worker gone in between (rendezvous asks rank 0's): tried again at the next poll, for a while.
            if now - waiting.since > elastic.timeout:
                trial.waiting = None
                ended = waiting.ended
                ended.error = f"{waiting.why}; the job could not start again ({type(exc).__name__}: {exc})"
                return ended
            return None
        trial.regroup(free[:size], attempt)
        trial.regrouped_from = waiting.from_step
        if self.on_regroup is not None:
            self.on_regroup(
                Regrouped(
                    trial.trial_id,
                    waiting.why,
                    waiting.lost,
                    waiting.world_before,
                    size,
                    waiting.from_step,
                )
            )
        return None

    def _maybe_grow(self, trial: GangTrial, now: float) -> None:
        """Ask a running elastic job to end at its next checkpoint and start again larger, when it is below its
        maximum and workers are free (none of them wanted by another trial of the run waiting to start)."""
        if (
            self.elastic is None
            or trial.grow_asked
            or len(trial.workers) >= self.elastic.max_ranks
            or now - self._wanted_at < 2 * WORKER_CHECK
        ):
            return
        if not self._free_workers(eligible(self.present_workers(), self.resources)):
            return
        # The listing may be a second old (a worker just lost still in it): asked afresh before a regroup.
        if not self._free_workers(eligible_workers(self.client, self.resources)):
            return
        trial.grow_asked = True
        ask_to_regroup(self.client, trial.workers[0], self.exp_id, trial.trial_id)

    def _ran_again(self, trial: TaskTrial, outcome: Outcome) -> bool:
        """Whether ``outcome`` is one of a failed attempt that runs again (now, or already): as a worker lost
        mid-trial is (Dask runs its task again), as the next attempt of the same trial, its checkpoints there."""
        if self.retries.already(outcome):
            return True
        if not self.retries.take(trial, outcome):
            return False
        if self.on_retry is not None:
            self.on_retry(outcome, self.retries.why(trial.trial_id))
        spec = self._specs[trial.trial_id]
        self._pinned.pop(trial.trial_id, None)
        self._lingering.extend(self._tasks.get(trial.trial_id, []))  # released once it has ended
        retry = self.retries.failures[trial.trial_id]
        task = self._submit(self._task(spec, None), f"trial-{trial.trial_id}-retry-{retry}")
        self._tasks[trial.trial_id] = [task]
        trial.again()
        return True

    def abandon(self, trial: RunningTrial, why: str) -> Outcome:
        stuck = [trial.workers[rank] for rank in trial.unfinished()] if isinstance(trial, GangTrial) else []
        self.cancel(trial)
        # A rank still running may be blocked in a collective: its thread outlives the cancel.
        self.restart(stuck)
        return Outcome.lost(trial.trial_id, TrialState.STOPPED, f"stopped: {why}", ErrorKind.ABANDONED)

    def cancel(self, trial: RunningTrial) -> None:
        self._cancel(trial.trial_id, None)

    def _cancel(self, trial_id: int, ranks: list[int] | None) -> None:
        tasks = self._tasks.get(trial_id, [])
        for rank in range(len(tasks)) if ranks is None else ranks:
            tasks[rank].cancel()

    def lost(self) -> str | None:
        """Why the cluster is gone, once the client has been cut off from the scheduler for SCHEDULER_LOST
        seconds (a brief reconnect is not a loss); None while it is there."""
        if self.client.status == "running":
            self._disconnected_since = None
            return None
        now = time.monotonic()
        if self._disconnected_since is None:
            self._disconnected_since = now
        if now - self._disconnected_since < SCHEDULER_LOST:
            return None
        # A client whose reconnect gave up is closed, its scheduler forgotten: the address as it was.
        address = getattr(self.client.scheduler, "address", None) or self._scheduler_address
        return (
            f"lost the Dask scheduler at {address} (no connection for {SCHEDULER_LOST:.0f} s): "
            "the trials that were running are recorded as interrupted; resume the experiment once the cluster "
            "is back"
        )

    def finished(self, trial: RunningTrial, outcome: Outcome) -> int | None:
        """Let Dask drop the trial's tasks (we have its outcome) and free its workers; the trial that waited
        behind it on its worker begins now (Dask runs a worker's tasks in the order they came)."""
        self._pinned.pop(trial.trial_id, None)
        self._specs.pop(trial.trial_id, None)
        self.retries.forget(trial.trial_id)
        self._waiting.pop(trial.trial_id, None)
        self._lingering.extend(self._tasks.pop(trial.trial_id, []))  # released by tidy() once ended
        if isinstance(trial, GangTrial):
            self._busy.difference_update(trial.workers)
            self._gangs.pop(trial.trial_id, None)
            self._gang_specs.pop(trial.trial_id, None)
            self._saved.pop(trial.trial_id, None)
            return None
        worker = outcome.worker
        if worker is None:
            return None
        if worker in self._ran_on:
            self._ran_on.remove(worker)
        self._ran_on.append(worker)
        began = next((t for t, w in self._waiting.items() if w == worker), None)
        if began is not None:
            del self._waiting[began]  # it runs there now: the slot is not free
        else:
            # A hint for the next trial; not when a queued trial took the slot (at a run's end, when no more
            # trials are queued, a trial hinted there waited behind it while other workers had nothing left:
            # 1,000 one-second trials on 32 workers ran a second longer).
            self._freed.append(worker)
            del self._freed[:-16]  # only the latest few are worth a hint
        return began

    def tidy(self) -> None:
        self._unpin_orphans()
        ended, still = [], []
        for future in self._lingering:
            (ended if future.done() else still).append(future)
        self._lingering = still
        if ended:
            # Released on the client's IO loop, all in one callback: Future.release() from this thread wakes
            # the loop once per future (a self-pipe write each, ~0.1 ms of the kernel's CPU).
            self.client.loop.add_callback(_release_all, ended)

    def wind_down(self) -> None:
        """Wait (briefly) for the tasks whose outcomes arrived ahead of them, and release them.

        Each trial future carries a Dask done-callback, which runs on a thread pool that refuses work once the
        interpreter is exiting: a script that ended right after the run printed "cannot schedule new futures
        after shutdown" for the last trials. Once every task has ended and the client's loop has gone round
        once, no callback is left to fire late.
        """
        deadline = time.monotonic() + SETTLE_WAIT
        while self._lingering and time.monotonic() < deadline:
            time.sleep(0.005)
            self.tidy()
        # Whatever still runs after SETTLE_WAIT is released when this run is dropped (and cancelled then).
        self.client.sync(asyncio.sleep, 0)  # the loop has handed every fired callback to the thread pool

    # --- the cluster, for our trials ----------------------------------------------------------------------
    def _unpin_orphans(self) -> None:
        """Re-submit, unpinned, the hinted trials whose worker is gone and that Dask left with nowhere to run.

        A task pinned with ``allow_other_workers=True`` to a worker that then dies (a trial killing its worker,
        say) is rescheduled; if no worker is running at that moment it goes to "no-worker", and Dask re-checks
        such tasks on a worker's arrival against the dead worker alone (distributed 2026.8:
        ``bulk_schedule_unrunnable_after_adding_worker`` ignores loose restrictions): it would wait forever. A
        trial that needs resources is pinned strictly (see start()) and goes to "no-worker" whenever its worker
        dies: the same way out.
        """
        if not self._pinned or self.client.status != "running":
            return
        present = self.present_workers()
        orphans = {
            self._tasks[trial_id][0].key: trial_id
            for trial_id, worker in self._pinned.items()
            if worker not in present and not self._tasks[trial_id][0].done()
        }
        if not orphans:
            return
        states = self.client.run_on_scheduler(_task_states, list(orphans))
        for key, trial_id in orphans.items():
            del self._pinned[trial_id]
            if states.get(key) != "no-worker":
                continue  # running or queued elsewhere: Dask took it from there
            stranded = self._tasks[trial_id][0]
            task = self._submit(self._task(self._specs[trial_id], None), f"trial-{trial_id}-unpinned")
            self._tasks[trial_id] = [task]
            stranded.cancel()  # its end is ignored (poll() looks at the trial's task only)

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
                return parallel >= trials_that_fit(present, self.resources)
            return False
        return parallel >= trials_by_threads(present, self.cpus)

    def _slots(self, worker: str) -> int:
        """How many of our trials ``worker`` runs at once: its threads (per trial's cores); from the last listing
        while the client is cut off from the scheduler."""
        threads = self._known_workers().get(worker, {}).get("nthreads", 1)
        return max(1, threads // (self.cpus or 1))

    def restart(self, workers: list[str]) -> None:
        if not workers:
            return
        try:
            self.client.restart_workers(workers, timeout=RESTART_TIMEOUT, raise_for_error=False)
        except Exception as exc:  # a worker without a nanny cannot be restarted; the run goes on regardless
            warnings.warn(
                f"jupyter_dist: could not restart worker(s) {', '.join(workers)}, where a rank may still be "
                f"blocked in a collective ({type(exc).__name__}: {exc}); restart them by hand if later "
                "data-parallel runs cannot rendezvous there",
                RuntimeWarning,
                stacklevel=2,
            )


def _release_all(futures: list) -> None:
    """On the client's IO loop: let Dask drop these tasks' results (from there each release is cheap)."""
    for future in futures:
        future.release()


def _on_end(task, trial_id: int, rank: int, notify: Callable[[TaskEnded], None]) -> None:
    """Tell the loop when ``task`` ends (Dask calls back from its own thread)."""
    task.add_done_callback(lambda future: notify(TaskEnded(trial_id, rank, future)))


def _task_states(keys: list[str], dask_scheduler=None) -> dict[str, str | None]:
    """On the scheduler: the state of each task (None when it is unknown)."""
    tasks = dask_scheduler.tasks
    return {key: tasks[key].state if key in tasks else None for key in keys}
