"""Trials on Dask: the launcher the trial loop runs them through (the ``TrialLauncher`` seam, trials/_seams.py).

It subscribes to the experiment's event topic, passes stop requests to the workers, and runs each trial's task
lifecycle: start, decide from what arrives when the trial has ended (with the trial's own bookkeeping:
_task_trial.py, _gang.py), cancel, give up on, and let go of it. It composes four parts, each keeping its own
books and reached through a few methods: where trials may go (_placement.py), how their tasks reach the cluster
and are kept there (_trial_tasks.py), the single-task trials, which may run again (_single_trials.py), and the
data-parallel jobs, which may regroup (_gang_jobs.py).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack

from ..protocol import (
    CheckpointEvent,
    CheckpointPlan,
    ErrorKind,
    LogLine,
    Outcome,
    Regrouped,
    ReportBatch,
    TrialState,
    UtilizationSample,
)
from ._channel import EventChannel, clear_stops_on_workers, stop_on_workers
from ._cpus import CPU, declares_cpus
from ._elastic import Elastic
from ._gang import GangTrial
from ._gang_jobs import GangJobs
from ._gpu_types import TypeRotation, matching_types, of_type
from ._outbox import FRESH, RELAXED
from ._placement import Placement
from ._seams import RunningTrial, TaskEnded, TrialSpec
from ._single_trials import SingleTrials
from ._task_trial import TaskTrial
from ._trial_tasks import TrialTasks

# How long restarting the workers of ranks given up on may take.
RESTART_TIMEOUT = 30.0
# How long the end of a run waits for tasks whose outcome already arrived (normally a few ms behind it).
SETTLE_WAIT = 2.0
# The client cut off from the scheduler this long: the cluster is gone (Dask's client keeps trying to reconnect).
SCHEDULER_LOST = 5.0


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
        gpu_types: Sequence[str] | None = None,
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
        self.elastic = elastic if ranks else None
        # gpu_type=: one type the cluster has is one more resource; several, each trial given one in turn.
        rotation, types = None, None
        if gpu_types:
            counts = matching_types(client.scheduler_info(n_workers=-1)["workers"], gpu_types)
            if len(counts) == 1:
                self.resources = of_type(self.resources, next(iter(counts)))
            else:
                rotation, types = TypeRotation(counts), list(counts)
        self.tasks = TrialTasks(
            client,
            fn,
            exp_id,
            topic=self.topic,
            resources=self.resources,
            cpus=cpus,
            checkpoints=checkpoints,
            report_wait=self.report_wait,
            elastic=self.elastic is not None,
            gpu_types=rotation,
        )
        self.placement = Placement(client, ranks, self.resources, cpus, self.elastic, gpu_types=types)
        self.singles = SingleTrials(client, self.placement, self.tasks, max_failures)
        self.gangs = GangJobs(client, exp_id, self.resources, self.elastic, self.placement, self.tasks)
        self._disconnected_since: float | None = None

    # Set by the run once the launcher is made (jupyter_dist/_orchestrate.py); heard where the trials are kept.
    @property
    def on_retry(self) -> Callable[[Outcome, str], None] | None:
        return self.singles.on_retry

    @on_retry.setter
    def on_retry(self, hear: Callable[[Outcome, str], None] | None) -> None:
        self.singles.on_retry = hear

    @property
    def on_regroup(self) -> Callable[[Regrouped], None] | None:
        return self.gangs.on_regroup

    @on_regroup.setter
    def on_regroup(self, hear: Callable[[Regrouped], None] | None) -> None:
        self.gangs.on_regroup = hear

    # --- before the run ----------------------------------------------------------------------------------
    def capacity(self) -> int:
        return self.placement.capacity()

    def capacity_to_fill(self) -> int:
        return self.placement.capacity_to_fill()

    def check_function(self, timeout: float = 60.0) -> None:
        self.tasks.check_function(timeout)

    def forget_stops(self) -> None:
        """Before a resumed run: its workers may remember the experiment's last run being stopped."""
        clear_stops_on_workers(self.client, self.exp_id)

    def release(self) -> None:
        self.tasks.release()

    # --- the TrialLauncher interface ---------------------------------------------------------------------
    def events(
        self,
        on_reports: Callable[[ReportBatch], None],
        on_log: Callable[[LogLine], None],
        on_checkpoint: Callable[[CheckpointEvent], None],
        on_outcome: Callable[[Outcome], None],
        on_utilization: Callable[[UtilizationSample], None],
    ) -> AbstractContextManager:
        stack = ExitStack()
        stack.callback(self.release)  # last out: once nothing of the run is listening any more
        if self.ranks:
            checkpointed, saved = on_checkpoint, self.gangs.saved

            def on_checkpoint(event: CheckpointEvent) -> None:
                saved[event.trial_id] = event.step  # the newest: a job regroups from it
                checkpointed(event)

        stack.enter_context(
            EventChannel(
                self.client, self.topic, on_reports, on_log, on_checkpoint, on_outcome, on_utilization
            )
        )
        return stack

    def place(self, trial_id: int, behind: int = 0) -> list[str] | None:
        """Where the trial may run now (placement.for_single, .for_ranks). A data-parallel trial is never
        queued ahead (``behind``), and waits while a job waits for workers to go on: that job has them first."""
        if not self.ranks:
            return self.placement.for_single(trial_id, behind)
        if behind or self.gangs.regrouping():
            return None
        return self.placement.for_ranks()

    def queues_behind(self, parallel: int) -> bool:
        return self.placement.queues_behind(parallel)

    def start(
        self, starts: list[tuple[TrialSpec, list[str]]], notify: Callable[[TaskEnded], None]
    ) -> list[RunningTrial]:
        """Submit the trials: single-task ones placed alike in one submission (``client.map``: one message to
        the scheduler and one graph update there for all, instead of one each), a data-parallel trial's ranks
        each pinned to its worker."""
        if self.ranks:
            self.gangs.notify = notify
            return [self.gangs.start(spec, placement) for spec, placement in starts]
        return self.singles.start(starts)

    def stop(self, trial_ids: list[int] | None) -> None:
        if self.client.status != "running":  # nothing to tell workers we cannot reach
            return
        if trial_ids and self.ranks:
            # A data-parallel trial's stop is for its group of ranks running now: sent without waiting, it may
            # reach a worker after an elastic job's next group began there (clearing it first does not order it).
            for trial_id in trial_ids:
                group = self.gangs.running.get(trial_id)
                stop_on_workers(self.client, self.exp_id, [trial_id], group.attempt if group else None)
            return
        stop_on_workers(self.client, self.exp_id, trial_ids)

    # --- deciding when a trial has ended -----------------------------------------------------------------
    def settle(self, trial: RunningTrial, event: Outcome | TaskEnded) -> Outcome | None:
        if isinstance(event, Outcome):
            if not isinstance(trial, GangTrial):  # ~2 ms after the function returned
                assert isinstance(trial, TaskTrial)  # this launcher's trials are one or the other
                return None if self.singles.ran_again(trial, event) else event
            if event.attempt != trial.attempt:
                return None  # a rank of the job's last group (an elastic job regrouped since)
            if trial.rank_reported(event):
                self.stop([trial.trial_id])
            return None
        tasks = self.tasks.running.get(trial.trial_id, [])
        if event.rank >= len(tasks) or event.task is not tasks[event.rank]:
            return None  # a task re-submitted since (_unpin_orphans): it is not the trial's any more
        if isinstance(trial, GangTrial):
            if trial.rank_ended(event.rank, event.task):
                self.stop([trial.trial_id])
            return self.gangs.ended_or_regrouped(trial, time.monotonic())
        assert isinstance(trial, TaskTrial)  # this launcher's trials are one or the other
        return trial.task_ended(event.task)

    def poll(self, trial: RunningTrial, now: float) -> Outcome | None:
        if not isinstance(trial, GangTrial):
            assert isinstance(trial, TaskTrial)  # this launcher's trials are one or the other
            # A single-task trial's task is looked at here rather than given a done-callback: Dask runs each
            # callback through a thread pool, two thread hand-offs per trial that cost the kernel ~0.1 ms each
            # (the outcome event normally says how it ended anyway).
            outcome = trial.poll(self.tasks.running[trial.trial_id][0], now)
            return None if outcome is not None and self.singles.ran_again(trial, outcome) else outcome
        gangs = self.gangs
        if trial.waiting is not None:
            return gangs.go_on(trial, now)
        # Once a rank has left the job (its peers' collectives fail at once when its process dies), whether its
        # worker is gone is asked afresh at every poll: the cached listing would add up to WORKER_CHECK to the
        # time a job takes to fail or, elastic, to go on.
        lost = trial.left_cluster(self.placement.present_workers(fresh=trial.ending_since is not None))
        if lost:
            self.tasks.cancel(trial.trial_id, lost)
            self.stop([trial.trial_id])
        if trial.unfinished():
            gangs.maybe_grow(trial, now)
        outcome = gangs.ended_or_regrouped(trial, now)
        if outcome is not None or trial.waiting is not None:
            return outcome
        stuck = trial.stragglers(now)
        if not stuck:
            return None
        # Their threads outlive a cancel: a restart ends them (GangTrial.stragglers says why).
        self.tasks.cancel(trial.trial_id, stuck)
        self.restart([trial.workers[rank] for rank in stuck])
        return gangs.ended_or_regrouped(trial, now)

    def abandon(self, trial: RunningTrial, why: str) -> Outcome:
        stuck = [trial.workers[rank] for rank in trial.unfinished()] if isinstance(trial, GangTrial) else []
        self.cancel(trial)
        # A rank still running may be blocked in a collective: its thread outlives the cancel.
        self.restart(stuck)
        return Outcome.lost(trial.trial_id, TrialState.STOPPED, f"stopped: {why}", ErrorKind.ABANDONED)

    def cancel(self, trial: RunningTrial) -> None:
        self.tasks.cancel(trial.trial_id, None)

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
        self.singles.finished(trial.trial_id)
        placement = self.placement
        placement.waiting.pop(trial.trial_id, None)
        self.tasks.retire(trial.trial_id)  # released by tidy() once ended
        if isinstance(trial, GangTrial):
            self.gangs.finished(trial)
            return None
        worker = outcome.worker
        if worker is None:
            return None
        return placement.single_ended(worker)

    def tidy(self) -> None:
        self.singles.unpin_orphans()
        self.tasks.release_ended()

    def wind_down(self) -> None:
        """Wait (briefly) for the tasks whose outcomes arrived ahead of them, and release them.

        Each trial future carries a Dask done-callback, which runs on a thread pool that refuses work once the
        interpreter is exiting: a script that ended right after the run printed "cannot schedule new futures
        after shutdown" for the last trials. Once every task has ended and the client's loop has gone round
        once, no callback is left to fire late.
        """
        deadline = time.monotonic() + SETTLE_WAIT
        while self.tasks.lingering and time.monotonic() < deadline:
            time.sleep(0.005)
            self.tidy()
        # Whatever still runs after SETTLE_WAIT is released when this run is dropped (and cancelled then).
        self.client.sync(asyncio.sleep, 0)  # the loop has handed every fired callback to the thread pool

    # --- the cluster, for our trials ----------------------------------------------------------------------
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
