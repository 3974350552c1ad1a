"""Asynchronous trial scheduling on Dask: keep ``parallel`` trials in flight, start the next as each one ends.

The scheduler is generic: a *source* decides what to run (HPO asks Optuna, ablation walks its plan) and a
*sink* records what happened (the Experiment). It runs on the kernel's main thread, where it turns Ctrl-C (the
kernel's interrupt) into a graceful stop, and calls ``idle()`` between waits so a view can redraw and a Stop
button can be heard.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import queue
import signal
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import cloudpickle

from ._channel import EventChannel, stop_on_workers
from ._gang import Gang, check_placement, eligible_workers, merge_outcomes, rendezvous
from ._runner import probe_function, run_trial

__all__ = ["TrialScheduler", "TrialSource", "TrialSink", "TrialFunctionError"]

# How long a finished trial's outcome event may lag its future before the result is gathered instead.
OUTCOME_GRACE = 1.0
# Trials shorter than this are dominated by dispatch latency (Dask batches client->scheduler messages every
# 10 ms): for them three extra trials per slot are queued ahead so no worker waits for its next task. Longer trials
# get none, so the sampler always decides with the most recent results.
SHORT_TRIAL = 0.05
# How long the other ranks of a data-parallel trial get to end once one of them left the job early.
RANK_GRACE = 3.0
# How long restarting the workers of ranks given up on may take.
RESTART_TIMEOUT = 30.0
# How often the workers of running data-parallel trials are checked for having left the cluster.
WORKER_CHECK = 1.0
# How long a data-parallel trial waits for enough workers when none of ours is running (a restarted worker
# coming back, an adaptive cluster scaling up) before the run fails with a PlacementError.
WORKER_WAIT = 30.0
# How long the end of a run waits for tasks whose outcome already arrived (normally a few ms behind it).
SETTLE_WAIT = 2.0


# (scheduler address, hash of the pickled function) pairs whose function loaded on that cluster's workers.
_loadable: set[tuple[str, str]] = set()


class TrialFunctionError(RuntimeError):
    """The training function cannot run on the workers at all (e.g. a module they cannot import)."""


class TrialSource(Protocol):
    prunes: bool  # whether report() can ever say stop; when False reports are not handed to it

    def next_trial(self) -> tuple[int, dict[str, Any]] | None: ...

    def report(self, trial_id: int, batch: list) -> bool: ...

    def tell(self, record: Any) -> None: ...


class TrialSink(Protocol):
    def trial_started(self, trial_id: int, params: dict[str, Any]) -> None: ...

    def reports_arrived(self, trial_id: int, attempt: str, batch: list) -> None: ...

    def log(self, trial_id: int, attempt: str, stream: str, text: str) -> None: ...

    def trial_pruned(self, trial_id: int) -> None: ...

    def trial_finished(self, trial_id: int, outcome: dict) -> Any: ...


def _lost_outcome(state: str, error: str | None, rank: int = 0) -> dict:
    """The outcome of a trial whose task never gave one (worker lost, cancelled, abandoned)."""
    return dict(
        rank=rank,
        attempt=None,
        state=state,
        returned=None,
        last={},
        steps=None,
        started=None,
        duration=None,
        error=error,
        worker=None,
        stopped_at=None,
    )


class TrialScheduler:
    def __init__(
        self,
        client,
        fn: Callable,
        exp_id: str,
        *,
        parallel: int,
        poll_interval: float = 0.1,
        idle_interval: float = 0.1,
        stop_grace: float = 10.0,
        ranks: int | None = None,
        resources: dict[str, float] | None = None,
    ) -> None:
        if parallel < 1:
            raise ValueError(f"parallel must be at least 1, got {parallel}")
        self.client = client
        # ranks=k: every trial is a data-parallel job of k rank tasks on k distinct workers having `resources`.
        self.ranks = ranks
        self.resources = resources
        self.exp_id = exp_id
        self.parallel = parallel
        self.poll_interval = poll_interval
        self.idle_interval = idle_interval
        self.stop_grace = stop_grace
        self.topic = f"jupyter_dist-{exp_id}"
        self._fn_blob = cloudpickle.dumps(fn)
        self._stop = threading.Event()
        self._interrupts = 0
        self.timed_out = False

    def check_placement(self) -> int:
        """For trials of several ranks: how many fit on the cluster at once (PlacementError when none does)."""
        return check_placement(self.client, self.ranks or 1, self.resources)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        """Stop gracefully: start no more trials, tell the running ones to stop, keep what finished.

        Only sets a flag, so it is safe from any thread and from a signal handler; the run loop passes the stop
        on to the workers within ``poll_interval``.
        """
        self._stop.set()

    def check_function(self, timeout: float = 60.0) -> None:
        """Load the training function on a worker once, so an unimportable module fails fast and clearly.

        A function already loaded on this cluster (same bytes) is not probed again: re-running a cell costs no
        extra round trip.
        """
        probe_key = (self.client.scheduler.address, hashlib.sha1(self._fn_blob).hexdigest())
        if probe_key in _loadable:
            return
        future = self.client.submit(
            probe_function, self.exp_id, self._fn_blob, pure=False, key=f"jupyter_dist-probe-{self.exp_id}"
        )
        try:
            problem = future.result(timeout=timeout)
        except TimeoutError:
            raise TrialFunctionError(
                f"no Dask worker ran a first task within {timeout:.0f}s: does the cluster have workers, "
                "and do they have jupyter_dist installed?"
            ) from None
        except ModuleNotFoundError as exc:
            raise TrialFunctionError(
                f"the Dask workers cannot import {exc.name!r}: install it there"
            ) from None
        if problem:
            raise TrialFunctionError(problem)
        _loadable.add(probe_key)

    def run(
        self,
        source: TrialSource,
        sink: TrialSink,
        idle: Callable[[], None] = lambda: None,
        timeout: float | None = None,
    ) -> None:
        """Run the source's trials until it has no more, a stop is requested or ``timeout`` seconds have passed
        (then the running trials are stopped, as with a stop); a callback that raises aborts."""
        run = _Run(self, source, sink, timeout)
        with (
            EventChannel(self.client, self.topic, run.reports_arrived, sink.log, run.outcome_arrived),
            self.interrupts_stop(),
        ):
            try:
                last_idle = 0.0
                while run.step():
                    now = time.monotonic()
                    if now - last_idle >= self.idle_interval:
                        last_idle = now
                        idle()
                run.settle()
            except BaseException:
                stop_on_workers(self.client, self.exp_id)
                run.cancel_all()
                raise
            finally:
                idle()

    @contextlib.contextmanager
    def interrupts_stop(self):
        """While running, Ctrl-C asks for a graceful stop, a second one abandons the running trials, a third
        raises KeyboardInterrupt. A handler, not ``except KeyboardInterrupt``: the exception could land
        anywhere in the loop, even between two statements that must not be torn apart."""

        def on_interrupt(signum, frame):
            self._interrupts += 1
            self.request_stop()
            if self._interrupts > 2:
                raise KeyboardInterrupt

        try:
            previous = signal.signal(signal.SIGINT, on_interrupt)
        except ValueError:  # not the main thread: there is no Ctrl-C to catch here
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


class _Run:
    """The state of one ``TrialScheduler.run``: which trials are in flight and what has arrived."""

    def __init__(
        self, scheduler: TrialScheduler, source: TrialSource, sink: TrialSink, timeout: float | None
    ) -> None:
        self.s = scheduler
        self.source = source
        self.sink = sink
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.pruned: set[int] = set()  # trials the source decided to stop
        # Outcomes arrive on the event stream (the fast path); a finished future whose outcome event has not
        # come within OUTCOME_GRACE is gathered instead. An errored or cancelled future means the trial was lost.
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.running: dict[int, Any] = {}  # trial id -> future
        # trial id -> when its future finished without its outcome event having arrived
        self.unreported: dict[int, float] = {}
        self.recent: list[float] = []  # durations of the last few trials, to spot short ones
        # Workers that just finished a trial. The outcome event reaches us before the Dask scheduler has marked
        # the task done, so a plain submit could land behind a long trial on a busy worker: name the free one.
        self.freed: list[str] = []
        self.stop_broadcast = False
        self.stop_deadline: float | None = None
        # Futures of trials whose outcome has arrived but whose task has not ended yet: released once it has
        # (releasing a running task would cancel it noisily on its worker).
        self.lingering: list = []
        self.held: tuple | None = None  # a data-parallel trial asked for, waiting for enough free workers
        self.short_of_workers_since: float | None = None
        self.workers_checked = 0.0

    def step(self) -> bool:
        """Start what may start, then handle what arrives within one poll interval. False when all is done."""
        s = self.s
        if self.deadline is not None and not s.stopping and time.monotonic() > self.deadline:
            s.timed_out = True
            s.request_stop()
        if s.stopping:
            self._stopping()
        else:
            self._fill()
        if not self.running and (self.held is None or s.stopping):
            return False
        if s._interrupts > 1 or (self.stop_deadline is not None and time.monotonic() > self.stop_deadline):
            self._abandon("interrupted" if s._interrupts > 1 else "it did not stop within the grace period")
            return False
        self._gather_overdue()
        self._notice_lost_workers()
        self._give_up_on_stragglers()
        self._release_ended()
        try:
            self._handle(self.events.get(timeout=s.poll_interval))
        except queue.Empty:
            return True
        while not self.events.empty():
            self._handle(self.events.get_nowait())
        return True

    def _fill(self) -> None:
        # parallel=1 stays strictly sequential: one trial at a time, each decided with every result before it.
        short = (
            self.s.parallel > 1
            and len(self.recent) >= 4
            and sorted(self.recent)[len(self.recent) // 2] < SHORT_TRIAL
        )
        capacity = self.s.parallel * (4 if short else 1)
        while len(self.running) < capacity:
            planned, self.held = self.held or self.source.next_trial(), None
            if planned is None:
                return
            if not self.s.ranks:
                self._submit(*planned)
                continue
            workers = self._free_workers()
            if workers is None:
                self.held = planned  # it waits for enough of our workers to be free
                self._check_not_short_of_workers()
                return
            self.short_of_workers_since = None
            self._submit_ranks(*planned, workers)

    def _check_not_short_of_workers(self) -> None:
        """With none of our trials running, too few workers means the cluster shrank (a worker lost, an adaptive
        cluster scaling down, a restarted worker not back yet): wait a while, then say so."""
        if self.running:
            return  # a running trial will free its workers
        now = time.monotonic()
        if self.short_of_workers_since is None:
            self.short_of_workers_since = now
        elif now - self.short_of_workers_since > WORKER_WAIT:
            self.s.check_placement()  # a PlacementError saying what is needed and what is there

    def _free_workers(self) -> list[str] | None:
        busy = {w for gang in self.running.values() for w in gang.workers}
        free = [w for w in eligible_workers(self.s.client, self.s.resources) if w not in busy]
        return free[: self.s.ranks] if len(free) >= self.s.ranks else None

    def _stopping(self) -> None:
        if not self.stop_broadcast:
            self.stop_broadcast = True
            stop_on_workers(self.s.client, self.s.exp_id)
            self.stop_deadline = time.monotonic() + self.s.stop_grace

    def _submit(self, trial_id: int, params: dict) -> None:
        s = self.s
        self.sink.trial_started(trial_id, params)
        hint = {"workers": [self.freed.pop()], "allow_other_workers": True} if self.freed else {}
        future = s.client.submit(
            run_trial,
            s.exp_id,
            s._fn_blob,
            params,
            s.exp_id,
            trial_id,
            s.topic,
            key=f"jupyter_dist-{s.exp_id}-trial-{trial_id}",
            pure=False,
            **hint,
        )
        self.running[trial_id] = future
        future.add_done_callback(lambda f: self.events.put(("future", trial_id, f)))

    def _submit_ranks(self, trial_id: int, params: dict, workers: list[str]) -> None:
        s = self.s
        ranks = rendezvous(
            s.client, workers, trial_id
        )  # first: a worker gone by now fails before the trial starts
        self.sink.trial_started(trial_id, params)
        futures = [
            s.client.submit(
                run_trial,
                s.exp_id,
                s._fn_blob,
                params,
                s.exp_id,
                trial_id,
                s.topic,
                rank,
                key=f"jupyter_dist-{s.exp_id}-trial-{trial_id}-rank-{rank['rank']}",
                pure=False,
                workers=[worker],
                allow_other_workers=False,
                resources=s.resources,
            )
            for worker, rank in zip(workers, ranks, strict=True)
        ]
        self.running[trial_id] = Gang(workers, futures)
        for future in futures:
            future.add_done_callback(lambda f: self.events.put(("future", trial_id, f)))

    def _rank_event(self, trial_id: int, gang: Gang, kind: str, payload) -> None:
        if kind == "outcome":
            gang.reported[payload["rank"]] = payload
            if payload["state"] != "completed":
                # Its peers cannot get past their next collective without it: their next report() stops them,
                # or, blocked in a collective, they are given up on after RANK_GRACE (_give_up_on_stragglers).
                gang.rank_ended_early()
                if payload["state"] == "failed":
                    stop_on_workers(self.s.client, self.s.exp_id, [trial_id])
            return
        if kind != "future":
            return
        rank = gang.futures.index(payload)
        if rank in gang.outcomes:
            return  # already settled: its worker left the cluster
        if payload.status == "finished":
            gang.outcomes[rank] = outcome = payload.result()
            if outcome["state"] != "completed":
                gang.rank_ended_early()
        elif payload.status in ("error", "cancelled"):
            gang.outcomes[rank] = _lost_outcome("failed", _task_error(payload), rank)
            gang.rank_ended_early()
            stop_on_workers(self.s.client, self.s.exp_id, [trial_id])
        if not gang.unfinished():
            self._finish_ranks(trial_id, gang)

    def _finish_ranks(self, trial_id: int, gang: Gang) -> None:
        del self.running[trial_id]
        self._release_when_done(gang.futures)
        stopped = trial_id in self.pruned or self.s.stopping
        outcome = merge_outcomes(gang.outcomes, len(gang.futures), stopped)
        self._record(trial_id, outcome)

    def _notice_lost_workers(self) -> None:
        """A rank pinned to a worker that left the cluster (killed, out of memory) would wait for it forever:
        Dask does not fail a task whose only allowed worker is gone. Its peers are told to stop."""
        now = time.monotonic()
        gangs = [(trial_id, g) for trial_id, g in self.running.items() if isinstance(g, Gang)]
        if not gangs or now - self.workers_checked < WORKER_CHECK:
            return
        self.workers_checked = now
        present = self.s.client.scheduler_info(n_workers=-1)["workers"]
        for trial_id, gang in gangs:
            lost = [rank for rank in gang.unfinished() if gang.workers[rank] not in present]
            for rank in lost:
                gang.futures[rank].cancel()
                gang.outcomes[rank] = gang.reported.get(rank) or dict(
                    _lost_outcome(
                        "failed", f"rank {rank}'s worker {gang.workers[rank]} left the cluster", rank
                    ),
                    worker_lost=True,
                )
            if lost:
                gang.rank_ended_early()
                stop_on_workers(self.s.client, self.s.exp_id, [trial_id])
            if not gang.unfinished():
                self._finish_ranks(trial_id, gang)

    def _give_up_on_stragglers(self) -> None:
        """Ranks that have not ended RANK_GRACE after a peer left the job are given up on, and their workers
        restarted: they may be stuck in a collective the peer will never join (gloo wakes them only when the
        peer's process group is freed and its sockets close, which a DDP model kept alive prevents; aborting
        either side's process group does not, measured with torch 2.13; else torch's 30-minute timeout), or
        their pinned task may wait for a worker that died. A cancelled task does not stop a running thread; a
        restart does, as torchrun restarts a worker group when one of its workers fails."""
        now = time.monotonic()
        for trial_id, gang in list(self.running.items()):
            if (
                not isinstance(gang, Gang)
                or gang.ending_since is None
                or now - gang.ending_since < RANK_GRACE
            ):
                continue
            stuck = gang.unfinished()
            for rank in stuck:
                gang.futures[rank].cancel()
                # An outcome event that came without its task ending (a slow clean-up) still tells how it went.
                gang.outcomes[rank] = gang.reported.get(rank) or _lost_outcome(
                    "failed",
                    f"rank {rank} did not end within {RANK_GRACE:.0f}s of a peer leaving the job",
                    rank,
                )
            self._finish_ranks(trial_id, gang)
            self._restart([gang.workers[rank] for rank in stuck])

    def _restart(self, workers: list[str]) -> None:
        if not workers:
            return
        try:
            self.s.client.restart_workers(workers, timeout=RESTART_TIMEOUT, raise_for_error=False)
        except Exception as exc:  # a worker without a nanny cannot be restarted; the run goes on regardless
            warnings.warn(
                f"jupyter_dist: could not restart worker(s) {', '.join(workers)}, where a rank may still be "
                f"blocked in a collective ({type(exc).__name__}: {exc}); restart them by hand if later "
                "data-parallel runs cannot rendezvous there",
                RuntimeWarning,
                stacklevel=2,
            )

    def outcome_arrived(self, trial_id: int, outcome: dict) -> None:
        """Called on the IO thread by the event channel."""
        self.events.put(("outcome", trial_id, outcome))

    def reports_arrived(self, trial_id: int, attempt: str, batch: list) -> None:
        """Called on the IO thread: record at once; pruning decisions are the main thread's (Optuna's study is
        not shared between threads, and decisions then follow the reports' order exactly)."""
        self.sink.reports_arrived(trial_id, attempt, batch)
        if self.source.prunes:
            self.events.put(("reports", trial_id, batch))

    def _prune(self, trial_id: int) -> None:
        self.pruned.add(trial_id)
        self.sink.trial_pruned(trial_id)
        stop_on_workers(self.s.client, self.s.exp_id, [trial_id])

    def _finish(self, trial_id: int, outcome: dict) -> None:
        self._release_when_done([self.running.pop(trial_id)])
        self.unreported.pop(trial_id, None)
        if outcome["worker"] is not None:
            self.freed.append(outcome["worker"])
        if outcome["duration"] is not None and outcome["state"] == "completed":
            # Only trials that ran to their end say the function is cheap: pruned ones are short by decision.
            self.recent.append(outcome["duration"])
            del self.recent[:-8]
        self._record(trial_id, outcome)

    def _record(self, trial_id: int, outcome: dict) -> None:
        if trial_id in self.pruned and outcome["state"] in ("completed", "pruned"):
            outcome["state"] = "pruned"  # a trial that never reported again is pruned when it returns
        elif outcome["state"] == "pruned":
            outcome["state"] = "stopped"  # told to stop by the experiment, not by the pruner
        self.source.tell(self.sink.trial_finished(trial_id, outcome))

    def _handle(self, item: tuple) -> None:
        kind, trial_id, payload = item
        future = self.running.get(trial_id)
        if future is None:
            return  # already finished through the other path
        if isinstance(future, Gang):
            if kind == "reports":
                if trial_id not in self.pruned and self.source.report(trial_id, payload):
                    self._prune(trial_id)
            else:
                self._rank_event(trial_id, future, kind, payload)
            return
        if kind == "outcome":
            self._finish(trial_id, payload)
        elif kind == "reports":
            if trial_id not in self.pruned and self.source.report(trial_id, payload):
                self._prune(trial_id)
        elif payload is not future:
            return
        elif future.status == "finished":
            self.unreported.setdefault(trial_id, time.monotonic())
        elif future.status == "error":
            self._finish(trial_id, _lost_outcome("failed", _task_error(future)))
        elif future.status == "cancelled":
            self._finish(trial_id, _lost_outcome("stopped", None))

    def _gather_overdue(self) -> None:
        now = time.monotonic()
        overdue = [t for t, since in self.unreported.items() if now - since > OUTCOME_GRACE]
        if overdue:
            outcomes = self.s.client.gather([self.running[t] for t in overdue])
            for trial_id, outcome in zip(overdue, outcomes, strict=True):
                self._finish(trial_id, outcome)

    def _abandon(self, why: str) -> None:
        for trial_id, future in list(self.running.items()):
            for f in _futures(future):
                f.cancel()
            if isinstance(future, Gang):
                del self.running[trial_id]
                self._record(trial_id, _lost_outcome("stopped", f"stopped: {why}"))
                # A rank still running may be blocked in a collective: its thread outlives the cancel.
                self._restart([future.workers[rank] for rank in future.unfinished()])
            else:
                self._finish(trial_id, _lost_outcome("stopped", f"stopped: {why}"))

    def _release_when_done(self, futures: list) -> None:
        """Let Dask drop these trials' results: we have their outcomes."""
        for future in futures:
            if future.done():
                future.release()
            else:
                self.lingering.append(future)

    def _release_ended(self) -> None:
        still = []
        for future in self.lingering:
            if future.done():
                future.release()
            else:
                still.append(future)
        self.lingering = still

    def settle(self) -> None:
        """Wait (briefly) for the tasks whose outcomes arrived ahead of them, and release them.

        Each trial future carries a Dask done-callback, which runs on a thread pool that refuses work once the
        interpreter is exiting: a script that ended right after the run printed "cannot schedule new futures
        after shutdown" for the last trials. Once every task has ended and the client's loop has gone round
        once, no callback is left to fire late.
        """
        deadline = time.monotonic() + SETTLE_WAIT
        while self.lingering and time.monotonic() < deadline:
            time.sleep(0.005)
            self._release_ended()
        # Whatever still runs after SETTLE_WAIT is released when this run is dropped (and cancelled then).
        self.s.client.sync(asyncio.sleep, 0)  # the loop has handed every fired callback to the thread pool

    def cancel_all(self) -> None:
        for future in self.running.values():
            for f in _futures(future):
                f.cancel()


def _futures(running) -> list:
    return running.futures if isinstance(running, Gang) else [running]


def _task_error(future) -> str:
    if future.status == "cancelled":
        return "the task was cancelled"
    exc = future.exception()
    text = "".join(traceback.format_exception(type(exc), exc, future.traceback()))
    return f"the trial's task failed on Dask:\n{text}"
