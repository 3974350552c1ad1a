import time

import msgpack
import numpy as np
import pytest
import torch
from published import messages_by, published

import jupyter_dist
from jupyter_dist import TrialPruned
from jupyter_dist.protocol import LogLine, ReportBatch, decode, decode_all
from jupyter_dist.trials._outbox import BACKPRESSURE_INTERVAL, MAX_BATCH
from jupyter_dist.trials._trial_context import (
    Reporter,
    TrialContext,
    activate,
    forget_experiment,
    mark_stopped,
)


def test_report_outside_an_experiment_does_nothing():
    assert jupyter_dist.report(step=1, loss=0.5) is None
    r = Reporter()
    r.report(loss=1.0)
    assert r.should_stop is False


def test_trial_pruned_escapes_except_exception():
    assert not issubclass(TrialPruned, Exception)
    with pytest.raises(TrialPruned):
        try:
            raise TrialPruned("stop")
        except Exception:  # the broad handler a training loop might have
            pass


def wire(payload: bytes) -> list[dict]:
    """An event's messages as sent (pack_event's msgpack, undone)."""
    return msgpack.unpackb(payload, use_list=False)


@pytest.fixture
def context():
    sent = []
    ctx = TrialContext("exp-test", 3, "attempt-a", "topic", lambda topic, msg: sent.append((topic, msg)))
    activate(ctx)
    yield ctx, sent
    activate(None)
    forget_experiment("exp-test")


def test_a_loss_tracking_its_gradient_is_reported_without_a_warning(context):
    import warnings

    ctx, sent = context
    loss = (torch.ones(2, requires_grad=True) * 2).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "Converting a tensor with requires_grad=True to a scalar"
        jupyter_dist.report(step=0, loss=loss)
    ctx.flush()
    ((_, payload),) = sent
    assert wire(payload)[0]["b"][0][1] == {"loss": 4.0}


def test_numpy_and_torch_scalars_become_floats(context):
    ctx, sent = context
    jupyter_dist.report(step=2, a=np.float32(0.5), b=torch.tensor(1.5), c=np.int64(3), d=1)
    ctx.flush()
    ((topic, payload),) = sent
    assert topic == "topic"
    (msg,) = wire(payload)
    ((step, metrics, sent_at),) = msg["b"]
    assert metrics == {"a": 0.5, "b": 1.5, "c": 3.0, "d": 1.0}
    assert all(type(v) is float for v in metrics.values())
    assert (msg["t"], msg["a"], step) == (3, "attempt-a", 2)


def test_steps_count_up_when_not_given(context):
    ctx, sent = context
    for _ in range(3):
        jupyter_dist.report(loss=1.0)
    ctx.flush()
    assert [b[0] for _, p in sent for m in wire(p) for b in m["b"]] == [0, 1, 2]
    assert ctx.steps == 3


def test_reports_are_batched_and_never_overtaken(context):
    ctx, sent = context
    # Only a full batch sends: beside a CPU hog, 100 reports took longer than the fresh wait, and the first
    # batch left with 16.
    ctx.max_wait = 60.0
    for i in range(MAX_BATCH + 10):
        jupyter_dist.report(v=i)
    assert len(sent) == 1 and len(wire(sent[0][1])[0]["b"]) == MAX_BATCH  # a full batch leaves at once
    ctx.send_log("stdout", "done\n")  # a later message takes the rest along, ahead of itself, in one event
    ctx.flush()
    assert [[m["k"] for m in wire(p)] for _, p in sent] == [["r"], ["r", "l"]]
    messages = [decode(m) for _, p in sent for m in wire(p)]
    assert [type(m) for m in messages] == [ReportBatch, ReportBatch, LogLine]
    assert [row[1]["v"] for m in messages[:2] for row in m.rows] == list(range(MAX_BATCH + 10))
    assert decode_all(sent[1][1]) == messages[1:]
    ctx.send_log("stdout", "again\n")  # nothing pending: the line travels alone
    ctx.flush()
    assert [m["k"] for m in wire(sent[-1][1])] == ["l"]


def test_a_lone_report_leaves_within_the_flush_interval(context):
    ctx, sent = context
    jupyter_dist.report(v=1.0)
    deadline = time.monotonic() + 1
    while not sent and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sent and wire(sent[0][1])[0]["b"][0][1] == {"v": 1.0}


def test_non_numbers_are_refused_with_the_metric_name(context):
    with pytest.raises(TypeError, match="metric 'acc' must be a number, got str"):
        jupyter_dist.report(acc="high")
    with pytest.raises(TypeError, match="at least one metric"):
        jupyter_dist.report(step=1)


def test_report_raises_once_the_trial_is_stopped(context):
    ctx, sent = context
    jupyter_dist.report(loss=1.0)
    mark_stopped("exp-test", [3])
    with pytest.raises(TrialPruned):
        jupyter_dist.report(loss=0.9)
    assert Reporter(ctx).should_stop
    ctx.flush()
    assert [b[1] for _, p in sent for m in wire(p) for b in m["b"]] == [
        {"loss": 1.0},
        {"loss": 0.9},
    ]  # the one that raised too


def test_a_loop_that_outpaces_the_channel_is_held_back(context):
    ctx, sent = context
    started = time.monotonic()
    for i in range(10 * MAX_BATCH):
        jupyter_dist.report(v=i)
    # A full batch waits BACKPRESSURE_INTERVAL after the previous one left; the background flusher can add at
    # most one more batch per interval, so 10 batches take at least 4 intervals.
    assert time.monotonic() - started >= 4 * BACKPRESSURE_INTERVAL
    ctx.flush()
    assert sum(len(m["b"]) for _, p in sent for m in wire(p)) == 10 * MAX_BATCH


def test_a_pending_batch_leaves_when_its_wait_is_up():
    sent = []
    ctx = TrialContext(
        "exp-wait", 1, "a", "topic", lambda topic, msg: sent.append((time.monotonic(), msg)), max_wait=0.5
    )
    activate(ctx)
    try:
        started = time.monotonic()
        for i in range(5):
            jupyter_dist.report(step=i, v=1.0)
            time.sleep(0.01)
        deadline = time.monotonic() + 3
        while not sent and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        activate(None)
    ((at, payload),) = sent  # the five together, once the first had waited its 0.5 s
    (msg,) = wire(payload)
    assert [row[0] for row in msg["b"]] == [0, 1, 2, 3, 4]
    assert at - started >= 0.5


def _report_every_10ms(x):
    import time

    import jupyter_dist

    for step in range(20):
        jupyter_dist.report(step=step, v=x)
        time.sleep(0.01)
    return x


def _report_batches(sent: dict[str, list], exp) -> list[int]:
    """How many reports each event of the experiment's topic that carried any carried (``sent``: the events
    published, tests/published.py)."""
    counts = [
        sum(len(m.rows) for m in event if isinstance(m, ReportBatch)) for event in messages_by(sent, exp)
    ]
    return [n for n in counts if n]


def test_reports_nobody_decides_on_travel_together(run_hpo, client):
    # With a pruner the kernel decides on every report: each leaves within 5 ms, alone at this pace. With none
    # they only feed the views and the store, and wait up to 0.2 s (RELAXED) for company.
    with published(client.cluster.scheduler) as sent:
        fresh = run_hpo(
            _report_every_10ms, {"x": jupyter_dist.space.uniform(0, 1)}, trials=1, metric="v", pruner="median"
        )
        relaxed = run_hpo(
            _report_every_10ms, {"x": jupyter_dist.space.uniform(0, 1)}, trials=1, metric="v", pruner=None
        )
    fresh_batches, relaxed_batches = _report_batches(sent, fresh), _report_batches(sent, relaxed)
    assert sum(fresh_batches) == sum(relaxed_batches) == 20
    assert len(relaxed.history) == 20 and relaxed.trial_records()[0].steps == 20
    assert len(fresh_batches) >= 10
    assert 2 * len(relaxed_batches) <= len(fresh_batches), (fresh_batches, relaxed_batches)
