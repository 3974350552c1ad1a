"""The asynchronous trial loop: keep ``parallel`` trials in flight, start the next as each one ends.

It knows nothing of Dask: it drives the seams of trials/_seams.py, a *source* that decides what to run, a *sink*
that records what happened and a *launcher* that runs trials somewhere and says when one has ended. The loop runs
on the kernel's main thread and calls ``idle()`` between waits, so a view can redraw and a Stop button can be
heard; the launcher's IO thread only records and queues. What arrives is typed: a trial's reports
(``ReportBatch``), its outcome (``Outcome``), one of its tasks ending (``TaskEnded``).

Besides the source, the run's *goals* may end a trial or the run: a stop rule a trial's report meets ends it
completed, and a trial completing at the target ends the experiment (trials/_goals.py); a *watcher* (the run's
callbacks) hears of every trial's start, reports and end. All of them are asked on the loop's thread, in order.
"""

from __future__ import annotations

import contextlib
import math
import queue
import time
from collections.abc import Callable
from typing import Any

from ..errors import ClusterLost, MetricError
from ..protocol import (
    Direction,
    ErrorKind,
    Objective,
    Outcome,
    ReportBatch,
    ReportRow,
    ScopedValue,
    TrialState,
)
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
        self.pruned: set[int] = set()  # trials the source decided to stop
        self.events: queue.SimpleQueue[ReportBatch | Outcome | TaskEnded] = queue.SimpleQueue()
        self.recent: list[float] = []  # durations of the last few completed trials, to spot short ones
        self.held: TrialSpec | None = None  # a trial waiting until it can be placed
        self.queued: set[int] = set()  # trials queued ahead (see BRIEF_TRIAL) that have not begun yet
        self.stop_deadline: float | None = None
        self.completed_any = False
        self.watcher = watcher
        self.stop_rule = stop_rule  # a trial whose report meets it is stopped and ends completed
        self.target = target  # a completed trial reaching it ends the experiment
        self.constraints = constraints  # evaluated on each completed trial's metrics
        self.reached: set[int] = set()  # trials stopped by the stop rule
        self.target_reached: str | None = None  # what reached the target, once a trial has
        # The objective's scope over each running trial's current attempt: (attempt id, its reports so far).
        self.scoped: dict[int, tuple[str, ScopedValue]] | None = {} if objective.scope != "last" else None
        # Reports reach the loop's thread only when something decides on or hears of them: routing them costs
        # a queue hop per batch, which runs that need none do not pay.
        self.hears_reports = (
            source.prunes
            or stop_rule is not None
            or self.scoped is not None
            or (watcher is not None and watcher.wants_reports)
        )

    # --- the loop ----------------------------------------------------------------------------------------
    def run(self, idle: Callable[[], None] = lambda: None) -> None:
        """Run until the source has no more trials, a stop is requested or the timeout passes (then the running
        trials are stopped, as with a stop); a callback that raises aborts the run."""
        sink = self.sink
        with self.launcher.events(
            self._reports_arrived, sink.log_arrived, sink.checkpoint_arrived, self.events.put
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
                spec.trial_id, spec.params, spec.labels, queued, distributions=spec.distributions
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
            self._reports(trial, event)
            return
        outcome = self.launcher.settle(trial, event)
        if outcome is not None:
            self._finish(trial, outcome)

    def _reports(self, trial: RunningTrial, batch: ReportBatch) -> None:
        trial_id, rows = trial.trial_id, batch.rows
        if self.scoped is not None:
            rows = self._scope(batch)
        if self.watcher is not None and self.watcher.wants_reports:
            self.watcher.trial_reported(trial_id, batch.rows)
        if trial_id in self.pruned or trial_id in self.reached:
            return
        rule = self.stop_rule
        if rule is not None and any(rule.met(trial_id, metrics) for _, metrics, _ in batch.rows):
            # It reached its goal: stopped as a pruned trial is (its next report() raises), but completed.
            self.reached.add(trial_id)
            trial.told_to_stop = True
            self.launcher.stop([trial_id])
        elif self.source.prunes and self.source.report(trial_id, rows):
            self._prune(trial)

    def _scope(self, batch: ReportBatch) -> list[ReportRow]:
        """Feed the attempt's reports of the objective to its scope; the rows as the pruner is to see them, the
        objective's value at each step being the scope over the reports up to that step."""
        attempt, scoped = self.scoped.get(batch.trial_id, (None, None))
        if attempt != batch.attempt:  # its first reports, or a re-run attempt's (its curve starts over)
            scoped = self.objective.tracker()
            self.scoped[batch.trial_id] = (batch.attempt, scoped)
        metric, rows = self.objective.metric, []
        for step, metrics, sent_at in batch.rows:
            if metric in metrics:
                metrics = {**metrics, metric: scoped.add(metrics[metric])}
            rows.append([step, metrics, sent_at])
        return rows

    def _prune(self, trial: RunningTrial) -> None:
        self.pruned.add(trial.trial_id)
        trial.told_to_stop = True
        self.sink.trial_pruned(trial.trial_id)
        self.launcher.stop([trial.trial_id])

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
        ended = (TrialState.COMPLETED, TrialState.PRUNED)
        if trial.trial_id in self.reached and outcome.state in ended:
            outcome.state = TrialState.COMPLETED  # it met the stop rule: it reached its goal
        elif trial.trial_id in self.pruned and outcome.state in ended:
            outcome.state = TrialState.PRUNED  # a trial that never reported again is pruned when it returns
        elif outcome.state is TrialState.PRUNED:
            outcome.state = TrialState.STOPPED  # told to stop by the experiment, not by the pruner
        attempt, scoped = (self.scoped or {}).pop(trial.trial_id, (None, None))
        outcome = self.objective.judge(outcome, scoped if attempt == outcome.attempt else None)
        if self.constraints is not None and outcome.state is TrialState.COMPLETED:
            returned = outcome.returned if isinstance(outcome.returned, dict) else {}
            outcome.constraints = self.constraints.values({**outcome.last, **returned})
        self.sink.trial_finished(outcome)
        if outcome.error_kind is ErrorKind.METRIC and not self.completed_any:
            # The first trial to complete could not be judged: every other would fail the same way.
            raise MetricError(outcome.error)
        self.completed_any = self.completed_any or outcome.state is TrialState.COMPLETED
        self.source.tell(outcome)
        self._check_target(outcome)
        if self.watcher is not None:
            self.watcher.trial_ended(trial.trial_id)

    def _check_target(self, outcome: Outcome) -> None:
        """A completed trial at the target ends the experiment: no new trials, the running ones stopped."""
        if (
            self.target is None
            or self.target_reached is not None
            or self.stop.requested
            or outcome.state is not TrialState.COMPLETED
            or outcome.value is None
            or not self.objective.reaches(outcome.value, self.target)
        ):
            return
        sign = ">=" if self.objective.direction is Direction.MAX else "<="
        self.target_reached = (
            f"target {self.objective.metric} {sign} {self.target:g} reached by trial {outcome.trial_id} "
            f"({self.objective.metric}={outcome.value:.4g})"
        )
        self.stop.request()
