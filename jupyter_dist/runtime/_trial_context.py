"""The trial a worker thread is running: its reports batched to the kernel, its output, its stop flag.

``report()`` (jupyter_dist/_report.py) finds the calling thread's trial here. Messages are built with the
protocol's encoders only (jupyter_dist/protocol.py); stop flags are set from the kernel with ``Client.run``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import ArgumentError, TrialPruned
from ..protocol import RankInfo, encode_checkpoint, encode_log, encode_reports, encode_together

__all__ = ["Reporter", "TrialContext", "activate", "current_trial", "forget_experiment", "mark_stopped"]


# Stop flags of this worker process, set from the kernel with ``Client.run`` (a few ms) and read by report().
_stopped_trials: set[tuple[str, int]] = set()
_stopped_experiments: set[str] = set()


def mark_stopped(exp_id: str, trial_ids: list[int] | None = None) -> None:
    """Flag trials (or, with no ids, the whole experiment) as stopped in this process."""
    if trial_ids is None:
        _stopped_experiments.add(exp_id)
    else:
        _stopped_trials.update((exp_id, t) for t in trial_ids)


def forget_experiment(exp_id: str) -> None:
    """Drop an ended experiment's stop flags from this process."""
    _stopped_experiments.discard(exp_id)
    _stopped_trials.difference_update({key for key in _stopped_trials if key[0] == exp_id})


def _as_number(name: str, value: Any) -> float:
    # numpy and torch scalars are not msgpack types; float() accepts them and rejects anything else.
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"report(): metric {name!r} must be a number, got {type(value).__name__} {value!r}"
        ) from None


# Reports are sent in batches: one Dask event per report costs the trial's thread ~90 us and a tight loop of
# them floods the scheduler and the kernel (measured: a backlog of seconds). A batch leaves when it reaches
# MAX_BATCH reports, and at the latest its trial's ``max_wait`` after its first report (a background thread sees
# to that). Back-pressure: a full batch leaves no sooner than BACKPRESSURE_INTERVAL after the previous one, so a
# trial reports about MAX_BATCH / BACKPRESSURE_INTERVAL = 25,000 times a second at most; a loop that tries more
# waits in report(). Measured on 2 cores: without it two tight loops outran the kernel 2:1 and latency grew by a
# second a second; at 25,000 they deliver about what the kernel takes in (46,000 a second for two).
MAX_BATCH = 100
BACKPRESSURE_INTERVAL = 0.004
FLUSH_INTERVAL = 0.005
# How long a report may wait for others to travel with. FRESH when the kernel decides on every report (a
# pruner): a decision made late lets a doomed trial train on. RELAXED when reports only feed the views (redrawn
# 5 times a second: a report waits at most one redraw) and the store (written every 0.5 s): each event costs
# ~1 ms of CPU in the worker and ~1 ms in the kernel's scheduler and client, on the cores the trials run on with
# the embedded cluster, so a trial reporting 40 times a second (bench_trial_speed's digits) sends 5 events a
# second instead of 40 (10 at 0.1 s cost 0.7% more of the run's CPU, measured).
FRESH = FLUSH_INTERVAL
RELAXED = 0.2


class TrialContext:
    """One attempt of one trial, as the worker runs it: streams reports and captured output to the kernel."""

    def __init__(
        self,
        exp_id: str,
        trial_id: int,
        attempt: str,
        topic: str,
        emit,
        rank: RankInfo | None = None,
        max_wait: float = FRESH,
    ) -> None:
        self.exp_id = exp_id
        self.trial_id = trial_id
        self.attempt = attempt
        self.topic = topic
        self.rank_info = rank  # a data-parallel trial runs one task per rank
        self.rank = rank.rank if rank else 0
        self.world_size = rank.world if rank else 1
        self.devices: list[int] = []  # the worker's GPU indices this trial holds (gpus_per_trial=)
        self.checkpoint_dir: str | None = None  # where jupyter_dist.checkpoint() saves; None: it does not
        self.keep_checkpoints: int | None = None
        self._emit = emit  # worker.log_event, bound once: get_worker() per report would cost more
        self.max_wait = max_wait  # how long a report may wait for others to travel with (FRESH or RELAXED)
        self.steps = 0
        self.last: dict[str, float] = {}
        # When the function raised, before any clean-up ran: tells which rank of a job failed first.
        self.failed_at: float | None = None
        self._batch: list[list] = []  # [step, metrics, time] per report, oldest first
        self._batch_lock = threading.Lock()
        self._last_flush = 0.0

    @property
    def should_stop(self) -> bool:
        return self.exp_id in _stopped_experiments or (self.exp_id, self.trial_id) in _stopped_trials

    def report(self, step: int | None, metrics: dict[str, Any]) -> None:
        if not metrics:
            raise ArgumentError("report() needs at least one metric, e.g. report(step=3, loss=0.2)")
        values = {name: _as_number(name, value) for name, value in metrics.items()}
        step = self.steps if step is None else int(step)
        self.steps += 1
        self.last.update(values)
        if self.rank:  # rank 0 speaks for a data-parallel trial; the others only hear the stop
            if self.should_stop:
                raise TrialPruned(f"trial {self.trial_id} was stopped")
            return
        with self._batch_lock:
            self._batch.append([step, values, time.time()])
            size = len(self._batch)
        if size == 1:
            _flusher.due(self, time.monotonic() + self.max_wait)
        elif size >= MAX_BATCH:
            wait = self._last_flush + BACKPRESSURE_INTERVAL - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self.flush()
        if self.should_stop:
            raise TrialPruned(f"trial {self.trial_id} was stopped")

    def flush(self) -> None:
        """Send the reports not sent yet."""
        with self._batch_lock:
            self._flush_locked()

    def checkpointed(self, step: int, path: str, resumed: bool) -> None:
        """Tell the kernel the checkpoint of ``step`` at ``path`` was saved, or (``resumed``) that this attempt
        goes on from it: then its reports, when they give no step, are numbered on from there."""
        if resumed:
            self.steps = step + 1
        if not self.rank:
            self.send(encode_checkpoint(self.trial_id, self.attempt, step, path, resumed))

    def send_log(self, stream: str, text: str) -> None:
        """Send captured output, after every report made before it."""
        self.send(encode_log(self.trial_id, self.attempt, stream, text))

    def send(self, msg: dict) -> None:
        """Send one encoded message (an output line, the outcome) after every report made before it: in the
        same event as those not sent yet."""
        # Under the lock, so a batch the flusher thread is sending cannot overtake this message.
        with self._batch_lock:
            if self._batch:
                msg = encode_together([self._take_batch(), msg])
            self._emit(self.topic, msg)

    def _flush_locked(self) -> None:
        if self._batch:
            self._emit(self.topic, self._take_batch())

    def _take_batch(self) -> dict:
        self._last_flush = time.monotonic()
        msg = encode_reports(self.trial_id, self.attempt, self._batch)
        self._batch = []
        return msg


class _Flusher:
    """One daemon thread per worker process that sends each pending batch when it is due (its trial's
    ``max_wait`` after its first report).

    It sleeps while no report is pending, so an idle or computing trial costs nothing.
    """

    def __init__(self) -> None:
        self._due: dict[TrialContext, float] = {}  # trial -> when its pending batch must leave (monotonic)
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def due(self, ctx: TrialContext, at: float) -> None:
        with self._changed:
            # A batch that left early (full, or pushed out by a log line) left its entry: the new one replaces it.
            self._due[ctx] = at
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="jupyter_dist-report-flusher", daemon=True
                )
                self._thread.start()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                ready = [ctx for ctx, at in self._due.items() if at <= now]
                if not ready:
                    self._changed.wait(min(self._due.values(), default=now + 60.0) - now)
                    continue
                for ctx in ready:
                    del self._due[ctx]
            for ctx in ready:
                ctx.flush()


_flusher = _Flusher()


_thread = threading.local()
_active: dict[int, TrialContext] = {}


def activate(ctx: TrialContext | None) -> None:
    """Make ``ctx`` the trial of the calling thread (None: no trial)."""
    ident = threading.get_ident()
    _thread.ctx = ctx
    if ctx is None:
        _active.pop(ident, None)
    else:
        _active[ident] = ctx


def current_trial() -> TrialContext | None:
    """The trial running on this thread; from a helper thread, the process's only running trial."""
    ctx = getattr(_thread, "ctx", None)
    if ctx is None and len(_active) == 1:
        ctx = next(iter(_active.values()), None)
    return ctx


class Reporter:
    """Injected into a training function that declares a ``reporter`` parameter (Maggy's style).

    Created directly (``Reporter()``) outside an experiment it reports nowhere and never asks to stop.
    """

    def __init__(self, ctx: TrialContext | None = None) -> None:
        self._ctx = ctx

    def report(self, step: int | None = None, **metrics: Any) -> None:
        if self._ctx is not None:
            self._ctx.report(step, metrics)

    @property
    def should_stop(self) -> bool:
        return self._ctx is not None and self._ctx.should_stop
