"""The outbox: every trial of one experiment in a worker process sends through it, one event per interval."""

import threading
import time

from waiting import wait_until

from jupyter_dist.protocol import LogLine, Outcome, ReportBatch, TrialState, decode_all, encode_outcome
from jupyter_dist.trials._outbox import BUSY_GAP, FRESH, RELAXED
from jupyter_dist.trials._trial_context import TrialContext, forget_experiment


class Events:
    """What the outbox emits, as a worker's log_event would hand it to Dask: (when, decoded messages)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, list]] = []
        self.wall: list[float] = []  # when each was emitted, on the clock a report's sent_at is on

    def __call__(self, topic, msg) -> None:
        self.sent.append((time.monotonic(), decode_all(msg)))
        self.wall.append(time.time())

    def wait_for(self, n: int, timeout: float = 30.0) -> None:
        wait_until(lambda: len(self.sent) >= n, timeout, f"{n} events", poll=0.002)

    def messages(self) -> list:
        return [m for _, ms in self.sent for m in ms]


def _contexts(exp_id: str, n: int, events: Events, max_wait: float) -> list[TrialContext]:
    return [TrialContext(exp_id, t, f"a{t}", "topic", events, max_wait=max_wait) for t in range(n)]


def test_the_trials_of_a_process_share_one_event_per_interval():
    events = Events()
    trials = _contexts("exp-outbox-1", 20, events, RELAXED)
    try:
        for step in range(3):
            for ctx in trials:
                ctx.report(step, {"v": float(ctx.trial_id)})
        events.wait_for(1)
        time.sleep(RELAXED / 4)
        # 60 reports of 20 trials: one event, once the first report had waited RELAXED
        assert len(events.sent) == 1
        batches = events.messages()
        assert {b.trial_id for b in batches} == set(range(20))
        assert all(isinstance(b, ReportBatch) and [r[0] for r in b.rows] == [0, 1, 2] for b in batches)
    finally:
        forget_experiment("exp-outbox-1")


def test_a_trials_messages_keep_their_order_among_the_others():
    events = Events()
    a, b = _contexts("exp-outbox-2", 2, events, RELAXED)
    try:
        a.report(0, {"v": 1.0})
        b.report(0, {"v": 2.0})
        a.send_log("stdout", "after a's first report\n")
        a.report(1, {"v": 1.5})
        b.send(encode_outcome(Outcome(1, "a1", TrialState.COMPLETED)))
        events.wait_for(1)
        ((_, messages),) = events.sent  # the outcome was due soonest and took everything along
        kinds = [(type(m).__name__, m.trial_id) for m in messages]
        assert kinds.index(("ReportBatch", 0)) < kinds.index(("LogLine", 0))
        assert kinds.index(("ReportBatch", 1)) < kinds.index(("Outcome", 1))
        a_reports = [r[0] for m in messages if isinstance(m, ReportBatch) and m.trial_id == 0 for r in m.rows]
        assert a_reports == [0, 1]
        line = next(m for m in messages if isinstance(m, LogLine))
        after = [
            m for m in messages[messages.index(line) :] if isinstance(m, ReportBatch) and m.trial_id == 0
        ]
        assert [r[0] for m in after for r in m.rows] == [1]  # reported after the line: travels after it
    finally:
        forget_experiment("exp-outbox-2")


def test_an_outcome_leaves_soon_and_takes_relaxed_reports_along():
    events = Events()
    (ctx,) = _contexts("exp-outbox-3", 1, events, RELAXED)
    try:
        ctx.report(0, {"v": 1.0})
        sent = time.monotonic()
        ctx.send(encode_outcome(Outcome(0, "a0", TrialState.COMPLETED)))
        events.wait_for(1)
        ((at, messages),) = events.sent
        assert [type(m) for m in messages] == [ReportBatch, Outcome]
        assert at - sent < RELAXED / 2  # due within OUTCOME_WAIT, not the report's 0.2 s
    finally:
        forget_experiment("exp-outbox-3")


def test_fresh_reports_of_many_trials_wait_at_most_the_busy_gap():
    events = Events()
    trials = _contexts("exp-outbox-4", 16, events, FRESH)
    stop = threading.Event()

    def report(ctx):
        step = 0
        while not stop.is_set():
            ctx.report(step, {"v": 1.0})
            step += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=report, args=(ctx,)) for ctx in trials]
    try:
        for t in threads:
            t.start()
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        for ctx in trials:
            ctx.flush()
        rows = [(m.trial_id, r[0]) for _, ms in events.sent for m in ms for r in m.rows]
        assert sorted(rows) == sorted(
            (ctx.trial_id, s) for ctx in trials for s in range(ctx.steps)
        )  # each once
        # 16 trials x 100 reports a second: about one event per BUSY_GAP, not one per trial every FRESH (~1,600)
        assert len(events.sent) <= 2 * 0.5 / BUSY_GAP
        waited = sorted(
            wall - row[2]
            for wall, (_, ms) in zip(events.wall, events.sent, strict=True)
            for m in ms
            for row in m.rows
        )
        # What a pruner is handed: within its 50 ms (BUSY_GAP's 25 ms, with room for 16 threads on 2 busy cores;
        # the reports left to wait as relaxed ones would take RELAXED, 200 ms).
        assert waited[len(waited) // 2] <= 2 * BUSY_GAP, waited[len(waited) // 2]
    finally:
        stop.set()
        forget_experiment("exp-outbox-4")


def test_a_failed_send_leaves_the_process_sending_the_next_events(caplog):
    events = Events()
    failures = []

    def emit(topic, msg):
        if not failures:  # the first event fails to send (a worker closing, say)
            failures.append(msg)
            raise RuntimeError("comm closed")
        events(topic, msg)

    ctx = TrialContext("exp-outbox-fail", 0, "a0", "topic", emit, max_wait=FRESH)
    try:
        ctx.report(0, {"v": 1.0})
        wait_until(lambda: failures, 30, "the first send to fail", poll=0.002)
        ctx.report(1, {"v": 2.0})  # sent by the same background thread, which lived on
        events.wait_for(1)
        assert [r[0] for m in events.messages() for r in m.rows] == [1]
        assert "could not send the events of topic" in caplog.text
    finally:
        forget_experiment("exp-outbox-fail")
