import numpy as np
import pytest
import torch

import jupyter_dist
from jupyter_dist.report import Reporter, TrialContext, TrialPruned, activate, forget_experiment, mark_stopped


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


@pytest.fixture
def context():
    sent = []
    ctx = TrialContext("exp-test", 3, "attempt-a", "topic", lambda topic, msg: sent.append((topic, msg)))
    activate(ctx)
    yield ctx, sent
    activate(None)
    forget_experiment("exp-test")


def test_numpy_and_torch_scalars_become_floats(context):
    ctx, sent = context
    jupyter_dist.report(step=2, a=np.float32(0.5), b=torch.tensor(1.5), c=np.int64(3), d=1)
    ((topic, msg),) = sent
    assert topic == "topic"
    assert msg["m"] == {"a": 0.5, "b": 1.5, "c": 3.0, "d": 1.0}
    assert all(type(v) is float for v in msg["m"].values())
    assert (msg["t"], msg["a"], msg["s"]) == (3, "attempt-a", 2)


def test_steps_count_up_when_not_given(context):
    ctx, sent = context
    for _ in range(3):
        jupyter_dist.report(loss=1.0)
    assert [m["s"] for _, m in sent] == [0, 1, 2]
    assert ctx.steps == 3


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
    assert len(sent) == 2  # the report that raised was still delivered
