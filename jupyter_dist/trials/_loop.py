"""The asynchronous trial loop: keep ``parallel`` trials in flight, start the next as each one ends.

It knows nothing of Dask: it drives the seams of trials/_seams.py, a *source* that decides what to run, a *sink*
that records what happened and a *launcher* that runs trials somewhere and says when one has ended. The loop runs
on the kernel's main thread and calls ``idle()`` between waits, so a view can redraw and a Stop button can be
heard; the launcher's IO thread only records and queues. What arrives is typed: a trial's reports
(``ReportBatch``), its outcome (``Outcome``), one of its tasks ending (``TaskEnded``).

Besides the source, the run's *goals* may end a trial or the run: a stop rule a trial's report meets ends it
completed, and a trial completing at the target ends the experiment (trials/_goals.py; applied by
trials/_decisions.py with the pruner's stops); a *watcher* (the run's callbacks) hears of every trial's start,
reports and end. All of them are asked on the loop's thread, in order.
"""

from __future__ import annotations

import contextlib
import math
import queue
import time
from collections.abc import Callable
from typing import Any

from ..errors import ClusterLost, MetricError
from ..protocol import ErrorKind, Objective, Outcome, ReportBatch, TrialState
from ._decisions import TrialDecisions
from ._goals import Constraints, StopRule
from ._interrupts import StopSignal
from ._seams import RunningTrial, TaskEnded, TrialLauncher, TrialSink, TrialSource, TrialSpec, TrialWatcher

__all__ = ["TrialLoop"]

# Between one trial's end and the next one's start on its worker there is a round trip of 10-30 ms: the outcome
# leaving the worker (trials/_outbox.py OUTCOME_WAIT; up to 25 ms more when trials wait behind it there),
# reaching the kernel, the sampler's next ask, Dask's dispatch; the worker idle meanwhile (bench_trial_speed:
# 1.5-2% of a 0.6 s trial; on 32 single-thread worker processes 10-30 ms, 1-3% of a 1 s trial). Trials shorter
# than BRIEF_TRIAL therefore get trials queued on the workers behind each running one, which start the moment the
# one ahead of them ends (Dask runs them from the worker's own queue): one per slot, or as many as it takes to
# cover QUEUE_ROUND_TRIP (at most MAX_QUEUE_DEPTH) when trials take less than that. Longer trials get none, so
# the sampler decides with the latest results. The last trials are not queued ahead either: a trial waiting
# behind a busy worker while another worker has nothing left to run would cost more than the round trip it saves.
BRIEF_TRIAL = 2.0
QUEUE_ROUND_TRIP = 0.15
MAX_QUEUE_DEPTH = 16
# Trials placed at once (a run's first ones, hundreds of them) go to the launcher in chunks of this many: each
# chunk is one submission, and the first trials already run while the sampler asks for the later ones (an ask
# takes 0.1-0.25 ms: 960 of them, a quarter of a second).
START_CHUNK = 64
# How often a run whose parallelism follows the cluster asks it what it can run (a scheduler round trip).
FOLLOW_INTERVAL = 1.0


class TrialLoop:
    """One run of a source's trials through a launcher into a sink."""

    def __init__(
        self,
        launcher: TrialLauncher,
        source: TrialSource,
        sink: TrialSink,
        objective: Objective,
        *,
        parallel: int,
        follow: Callable[[], int] | None = None,
        stop: StopSignal | None = None,
        timeout: float | None = None,
        poll_interval: float = 0.1,
        idle_interval: float = 0.1,
        stop_grace: float = 10.0,
        watcher: TrialWatcher | None = None,
        stop_rule: StopRule | None = None,
        target: float | None = None,
        constraints: Constraints | None = None,
    ) -> None:
        self.launcher = launcher
        self.source = source
        self.sink = sink
        self.objective = objective
        self.parallel = parallel
        # When the user fixed no number: what the cluster can run now, re-read at most every FOLLOW_INTERVAL.
        self.follow = follow
        self.followed_at = time.monotonic()
        self.stop = stop or StopSignal()
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.poll_interval = poll_interval
        self.polled_at = 0.0  # when the launcher last looked at every running trial (launcher.poll)
        self.idle_interval = idle_interval
        self.stop_grace = stop_grace
        self.running: dict[int, RunningTrial] = {}
        self.events: queue.SimpleQueue[ReportBatch | Outcome | TaskEnded] = queue.SimpleQueue()
        self.recent: list[float] = []  # durations of the last few completed trials, to spot short ones
        self.held: TrialSpec | None = None  # a trial waiting until it can be placed
        self.queued: set[int] = set()  # trials queued ahead (see BRIEF_TRIAL) that have not begun yet
        self.stop_deadline: float | None = None
        self.completed_any = False
        self.watcher = watcher
        # Which trials to stop on their reports, what each ended as, and whether the target is reached.
        self.decisions = TrialDecisions(
            objective,
            source,
            sink,
            launcher,
            self.stop,
            watcher=watcher,
            stop_rule=stop_rule,
            target=target,
            constraints=constraints,
        )
        # Reports reach the loop's thread only when something decides on or hears of them: routing them costs
        # a queue hop per batch, which runs that need none do not pay.
        self.hears_reports = (
            source.prunes
            or stop_rule is not None
            or self.decisions.scoped is not None
            or (watcher is not None and watcher.wants_reports)
        )

    @property
    def target_reached(self) -> str | None:
        """What reached the run's target (ending the experiment), once a trial has."""
        return self.decisions.target_reached

    # --- the loop ----------------------------------------------------------------------------------------
    def run(self, idle: Callable[[], None] = lambda: None) -> None:
        """Run until the source has no more trials, a stop is requested or the timeout passes (then the running
        trials are stopped, as with a stop); a callback that raises aborts the run."""
        sink = self.sink
        with self.launcher.events(
            self._reports_arrived,
            sink.log_arrived,
            sink.checkpoint_arrived,
            self.events.put,
            sink.utilization_arrived,
        ):
            try:
                last_idle = 0.0
                while self.step():
                    now = time.monotonic()
                    if now - last_idle >= self.idle_interval:
                        last_idle = now
                        idle()
                self.launcher.wind_down()
            except BaseException:
                self.launcher.stop(None)
                for trial in self.running.values():
                    self.launcher.cancel(trial)
                raise
            finally:
                idle()

    def step(self) -> bool:
        """Start what may start, then handle what arrives within one poll interval. False when all is done."""
        lost = self.launcher.lost()
        if lost is not None:
            for trial in list(self.running.values()):
                self._finish(
                    trial, Outcome.lost(trial.trial_id, TrialState.INTERRUPTED, lost, ErrorKind.LOST)
                )
            raise ClusterLost(lost)
        if self.deadline is not None and not self.stop.requested and time.monotonic() > self.deadline:
            self.stop.timed_out = True
            self.stop.request()
        if self.stop.requested:
            self._stopping()
        else:
            self._fill()
        if not self.running and (self.held is None or self.stop.requested):
            return False
        if self.stop.interrupts > 1 or (
            self.stop_deadline is not None and time.monotonic() > self.stop_deadline
        ):
            why = "interrupted" if self.stop.interrupts > 1 else "it did not stop within the grace period"
            for trial in list(self.running.values()):
                self._finish(trial, self.launcher.abandon(trial, why))
            return False
        now = time.monotonic()
        if now - self.polled_at >= self.poll_interval:  # not at every event: a step per event, 1,000 trials
            self.polled_at = now
            for trial in list(self.running.values()):
                outcome = self.launcher.poll(trial, now)
                if outcome is not None:
                    self._finish(trial, outcome)
        self.launcher.tidy()
        try:
            self._handle(self.events.get(timeout=self.poll_interval))
        except queue.Empty:
            return True
        while not self.events.empty():
            self._handle(self.events.get_nowait())
        return True

    def _fill(self) -> None:
        if self.follow is not None and time.monotonic() - self.followed_at >= FOLLOW_INTERVAL:
            self.followed_at = time.monotonic()
            with contextlib.suppress(OSError, TimeoutError):  # no answer now: keep the last figure (a cluster
                self.parallel = max(1, self.follow())  # that is gone is the launcher's lost() to report)
        depth = self._queue_depth()
        starts: list[tuple[TrialSpec, Any]] = []  # started together: one submission for all (launcher.start)
        queued_now: set[int] = set()
        while len(self.running) + len(starts) < self.parallel * (1 + depth):
            spec = self.held or self.source.next_trial()
            self.held = None
            if spec is None:
                break
            queued = len(self.running) + len(starts) - len(self.queued) - len(queued_now) >= self.parallel
            placement = self.launcher.place(spec.trial_id, depth if queued else 0)
            if placement is None:
                self.held = spec  # it waits for enough free workers (or a worker to queue it on)
                break
            # Recorded before it starts: its first reports may arrive before start() returns.
            self.sink.trial_started(
                spec.trial_id,
                spec.params,
                spec.labels,
                queued,
                distributions=spec.distributions,
                seed=spec.seed,
            )
            starts.append((spec, placement))
            if queued:
                queued_now.add(spec.trial_id)
            if len(starts) == START_CHUNK:  # the first trials run while the sampler asks for the next ones
                self._start(starts, queued_now)
                starts, queued_now = [], set()
        self._start(starts, queued_now)

    def _start(self, starts: list[tuple[TrialSpec, Any]], queued: set[int]) -> None:
        if not starts:
            return
        for trial in self.launcher.start(starts, self.events.put):
            self.running[trial.trial_id] = trial
        self.queued |= queued
        if self.watcher is not None:
            for spec, _ in starts:
                self.watcher.trial_started(spec.trial_id)

    def _queue_depth(self) -> int:
        """How many trials to keep queued per worker slot, behind the running ones (see BRIEF_TRIAL)."""
        # parallel=1 stays strictly sequential: one trial at a time, each decided with every result before it.
        if self.parallel == 1 or len(self.recent) < 4 or not self.launcher.queues_behind(self.parallel):
            return 0
        remaining = self.source.remaining()
        if remaining is not None and remaining <= self.parallel:
            return 0
        typical = sorted(self.recent)[len(self.recent) // 2]
        if typical >= BRIEF_TRIAL:
            return 0
        return max(1, min(MAX_QUEUE_DEPTH, math.ceil(QUEUE_ROUND_TRIP / max(typical, 1e-6))))

    def _stopping(self) -> None:
        if self.stop_deadline is None:
            self.stop_deadline = time.monotonic() + self.stop_grace
            for trial in self.running.values():
                trial.told_to_stop = True
            self.launcher.stop(None)

    # --- what arrives --------------------------------------------------------------------------------------
    def _reports_arrived(self, batch: ReportBatch) -> None:
        """On the launcher's IO thread: record at once; decisions (pruning, the stop rule, the scope) and the
        callbacks are the loop's (Optuna's study is not shared between threads, and decisions then follow the
        reports' order exactly)."""
        self.sink.reports_arrived(batch)
        if self.hears_reports:
            self.events.put(batch)

    def _handle(self, event: ReportBatch | Outcome | TaskEnded) -> None:
        trial = self.running.get(event.trial_id)
        if trial is None:
            return  # already finished through another path
        if isinstance(event, ReportBatch):
            self.decisions.reports(trial, event)
            return
        outcome = self.launcher.settle(trial, event)
        if outcome is not None:
            self._finish(trial, outcome)

    def _finish(self, trial: RunningTrial, outcome: Outcome) -> None:
        del self.running[trial.trial_id]
        self.queued.discard(trial.trial_id)
        began = self.launcher.finished(trial, outcome)
        if began in self.queued:
            self.queued.discard(began)
            self.sink.trial_began(began)
        if outcome.state is TrialState.COMPLETED and outcome.duration is not None:
            # Only trials that ran to their end say the function is cheap: pruned ones are short by decision.
            self.recent.append(outcome.duration)
            del self.recent[:-8]
        outcome = self.decisions.judged(trial.trial_id, outcome)
        self.sink.trial_finished(outcome)
        if outcome.error_kind is ErrorKind.METRIC and not self.completed_any:
            # The first trial to complete could not be judged: every other would fail the same way.
            raise MetricError(outcome.error)
        self.completed_any = self.completed_any or outcome.state is TrialState.COMPLETED
        self.source.tell(outcome)
        self.decisions.check_target(outcome)
        if self.watcher is not None:
            self.watcher.trial_ended(trial.trial_id)
