"""What a worker process sends to the kernel: every trial's messages for one experiment, together.

Each Dask event costs about a millisecond of CPU in the worker and one in the kernel's scheduler and client
(bench_trial_speed), whatever it carries. A worker running many trials at once (hundreds of threads of sleeping
or I/O-bound trials) therefore sends its trials' reports, output lines, checkpoints and outcomes as one event per
interval for the whole process, not one per trial: the kernel's and the scheduler's CPU per second then grows with
the number of workers, not with the number of trials (issue 26). Within the event each trial's messages keep the
order they were made in, so a trial's reports still arrive before the output line or outcome sent after them.

How long something may wait for company is set by the most urgent thing waiting:
- a report a pruner decides on (``FRESH``): 5 ms, or, when the last event carried several trials' reports, FRESH
  per trial after it, at most BUSY_GAP: a busy worker sends at most 1 / BUSY_GAP events a second, and a pruner
  still hears of each report well within its 50 ms target;
- a report only the views and the store read (``RELAXED``): 0.2 s, one redraw of the views; a utilisation sample
  (trials/_utilization.py, one a second per trial) as long;
- an outcome or a checkpoint: OUTCOME_WAIT (the kernel starts the next trial when it hears of the end), an
  output line LOG_WAIT.
A trial whose reports fill a batch (MAX_BATCH) sends everything at once, but no sooner than BACKPRESSURE_INTERVAL
after the previous event: a loop that reports faster than the kernel can take in waits in ``report()``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..protocol import encode_reports, pack_event

__all__ = [
    "BACKPRESSURE_INTERVAL",
    "BUSY_GAP",
    "FRESH",
    "LOG_WAIT",
    "MAX_BATCH",
    "MAX_EVENT_ROWS",
    "OUTCOME_WAIT",
    "QUEUED_OUTCOME_WAIT",
    "RELAXED",
    "Outbox",
    "outbox_for",
]

logger = logging.getLogger(__name__)

# A batch leaves when one trial has MAX_BATCH reports waiting. Back-pressure: then no sooner than
# BACKPRESSURE_INTERVAL after the process's previous event, so a trial reports about MAX_BATCH /
# BACKPRESSURE_INTERVAL = 25,000 times a second at most; a loop that tries more waits in report(). Measured on 2
# cores: without it two tight loops outran the kernel 2:1 and latency grew by a second a second.
MAX_BATCH = 100
BACKPRESSURE_INTERVAL = 0.004
# An event leaves at once when it holds this many reports of all the process's trials: the kernel takes in no
# bigger burst at a time (a worker of 120 trials reporting 10 times a second fills 240 in its 0.2 s).
MAX_EVENT_ROWS = 1000
# How long a report may wait for others to travel with: FRESH when the kernel decides on every report (a pruner):
# a decision made late lets a doomed trial train on; RELAXED when reports only feed the views (redrawn 5 times a
# second: a report waits at most one redraw) and the store (written every 0.5 s).
FRESH = 0.005
RELAXED = 0.2
# The longest a fresh report waits when several trials of the process report: each trial reporting adds FRESH,
# up to this (then at most 40 events a second per worker, however many trials it runs).
BUSY_GAP = 0.025
# An outcome: the kernel places the next trial when it hears of it, so it barely waits (outcomes of trials that end
# together still share an event); when trials wait on the worker behind it, longer (trials/_runner.py). An output
# line: read by people, through views that redraw 5 times a second.
OUTCOME_WAIT = FRESH
QUEUED_OUTCOME_WAIT = BUSY_GAP
LOG_WAIT = 0.1


class Reporting(Protocol):
    """A trial whose report rows wait in its own batch (trials/_trial_context.py); the outbox takes them."""

    trial_id: int
    attempt: str
    batch: list[list]


class Outbox:
    """One experiment's messages waiting in this worker process, sent as one event when the most urgent is due.

    Every method that adds or takes holds ``lock``; the event is emitted under it too, so a flush from the
    background thread and one from a trial's thread cannot overtake each other.
    """

    def __init__(self, topic: str, emit: Callable[[str, Any], None]) -> None:
        self.topic = topic
        self._emit = emit  # worker.log_event, bound once
        self.lock = threading.Lock()
        self._messages: list[Mapping[str, Any]] = []  # encoded, in the order they were sent
        # Trials with report rows waiting in their own batch (an ordered set): their rows are newer than any
        # message of theirs in _messages, so they go after those.
        self._reporting: dict[Reporting, None] = {}
        self.due: float | None = None  # when what waits must leave (time.monotonic)
        self.last_sent = 0.0
        self._last_reporting = 0  # how many trials' reports the last event carried
        self.rows = 0  # report rows waiting, all trials' (MAX_EVENT_ROWS: the event is full)

    # --- adding (a trial's thread) ------------------------------------------------------------------------
    def reported(self, trial: Reporting, wait: float) -> None:
        """``trial`` appended a row to its batch (under ``lock``): send it within ``wait`` (stretched towards
        BUSY_GAP when several trials are reporting), or at once, back-pressure applied, when its batch is full."""
        if len(trial.batch) == 1:
            self._reporting[trial] = None
        self.rows += 1
        if self.full(trial):
            self.due = 0.0  # leave now (the caller flushes, outside the lock, after its back-pressure wait)
            return
        if wait == FRESH and self._last_reporting > 1:
            # Several trials report here: the next event leaves FRESH per trial after the last one (at most
            # BUSY_GAP), however soon this report would have it leave.
            gap = min(FRESH * self._last_reporting, BUSY_GAP)
            wait = max(wait, self.last_sent + gap - time.monotonic())
        self._due_in(wait)

    def full(self, trial: Reporting) -> bool:
        """Whether what waits must leave now: ``trial``'s batch is full, or the event is (MAX_EVENT_ROWS)."""
        return len(trial.batch) >= MAX_BATCH or self.rows >= MAX_EVENT_ROWS

    def add(self, trial: Reporting, message: Mapping[str, Any], wait: float) -> None:
        """A message of ``trial`` (under ``lock``), after the reports it has waiting: send it within ``wait``."""
        if trial.batch:
            self._messages.append(self._take(trial))  # (its rows still count in ``rows``: they wait too)
            del self._reporting[trial]
        self._messages.append(message)
        self._due_in(wait)

    def _due_in(self, wait: float) -> None:
        due = time.monotonic() + wait
        if self.due is None or due < self.due:
            self.due = due
            _flusher.wake(self)

    # --- sending -------------------------------------------------------------------------------------------
    def hold_back(self) -> None:
        """Back-pressure for a trial whose batch is full: wait until BACKPRESSURE_INTERVAL after the last event."""
        wait = self.last_sent + BACKPRESSURE_INTERVAL - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def flush(self) -> None:
        """Send everything waiting, as one event."""
        with self.lock:
            messages = self._messages
            self._messages = []
            messages.extend(self._take(trial) for trial in self._reporting)
            self._last_reporting = len(self._reporting)
            self.rows = 0
            self._reporting.clear()
            self.due = None
            if not messages:
                return
            self.last_sent = time.monotonic()
            self._emit(self.topic, pack_event(messages))

    @staticmethod
    def _take(trial: Reporting) -> Mapping[str, Any]:
        message = encode_reports(trial.trial_id, trial.attempt, trial.batch)
        trial.batch = []
        return message


class _Flusher:
    """One daemon thread per worker process that sends each outbox's waiting messages when they are due.

    It sleeps while nothing waits, so an idle or computing worker costs nothing.
    """

    def __init__(self) -> None:
        self._waiting: set[Outbox] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def wake(self, outbox: Outbox) -> None:
        """``outbox`` is due sooner than before (its ``due`` moved earlier)."""
        with self._changed:
            self._waiting.add(outbox)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jupyter_dist-outbox", daemon=True)
                self._thread.start()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                # An outbox flushed by a trial's thread meanwhile has nothing due: drop it until it has again.
                dues = {box: due for box in self._waiting if (due := box.due) is not None}
                self._waiting = set(dues)
                ready = [box for box, due in dues.items() if due <= now]
                if not ready:
                    soonest = min(dues.values(), default=now + 60.0)
                    self._changed.wait(soonest - now)
                    continue
                self._waiting.difference_update(ready)
            for box in ready:
                try:
                    box.flush()
                except Exception:  # one outbox's failure must not end the thread every outbox here relies on
                    logger.exception("jupyter_dist: could not send the events of %s", box.topic)


_flusher = _Flusher()

# This process's outboxes, by (experiment id, topic, emit): one per experiment (and per emitter, where tests make
# several).
_outboxes: dict[tuple[str, str, Callable], Outbox] = {}
_outboxes_lock = threading.Lock()


def outbox_for(exp_id: str, topic: str, emit: Callable[[str, Any], None]) -> Outbox:
    """The outbox of experiment ``exp_id``, whose events go to ``topic`` through ``emit``, in this process."""
    key = (exp_id, topic, emit)
    box = _outboxes.get(key)
    if box is None:
        with _outboxes_lock:
            box = _outboxes.setdefault(key, Outbox(topic, emit))
    return box


def forget_outboxes(exp_id: str) -> None:
    """Drop an ended experiment's outboxes (after sending what they hold; a trial of it still running keeps its
    own, which still sends)."""
    with _outboxes_lock:
        ended = [key for key in _outboxes if key[0] == exp_id]
        boxes = [_outboxes.pop(key) for key in ended]
    for box in boxes:
        box.flush()
