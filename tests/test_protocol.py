"""The trial protocol: named states, the objective's one judgement, and the wire's one writer and reader."""

import math

import numpy as np
import pytest

import jupyter_dist as jd
from jupyter_dist.protocol import (
    CheckpointEvent,
    Direction,
    ErrorKind,
    LogLine,
    Objective,
    Outcome,
    ReportBatch,
    TrialState,
    decode_all,
    encode_checkpoint,
    encode_log,
    encode_outcome,
    encode_reports,
    pack_event,
)


def test_states_are_named_and_still_compare_as_the_strings_users_know():
    assert TrialState.COMPLETED == "completed" and f"{TrialState.PRUNED}" == "pruned"
    assert [s.value for s in TrialState if s.finished] == [
        "completed",
        "pruned",
        "failed",
        "stopped",
        "interrupted",
    ]
    assert Direction.parse("min") is Direction.MIN and Direction.MIN.optuna == "minimize"
    with pytest.raises(jd.ArgumentError, match="mode='up': use 'max' or 'min'"):
        Direction.parse("up")


def test_every_message_survives_msgpack_and_decodes_to_its_type():
    outcome = Outcome(
        4,
        "att",
        TrialState.FAILED,
        returned={"acc": 0.5},
        last={"acc": 0.5},
        steps=3,
        error="Traceback ...",
        error_kind=ErrorKind.SETUP,
        worker="tcp://w:1",
        rank=1,
    )
    messages = [encode_reports(4, "att", [[0, {"acc": 0.5}, 1.5]]), encode_log(4, "att", "stderr", "x\n")]
    messages.append(encode_checkpoint(4, "att", 7, "s3://b/exp/trial-4/step-000000007", True))
    messages.append(encode_outcome(outcome))
    batch, line, saved, back = decode_all(pack_event(messages))
    assert saved == CheckpointEvent(4, "att", 7, "s3://b/exp/trial-4/step-000000007", resumed=True)
    assert batch == ReportBatch(4, "att", ((0, {"acc": 0.5}, 1.5),))  # as Dask hands events over: tuples
    assert line == LogLine(4, "att", "stderr", "x\n")
    assert back == outcome and back.state is TrialState.FAILED and back.error_kind is ErrorKind.SETUP


def test_an_event_is_one_bytes_object_and_numpy_numbers_travel_as_floats():
    payload = pack_event(
        [encode_reports(1, "a", [(0, {"v": 0.5}, 1.0)]), encode_outcome(_completed(np.float32(2)))]
    )
    assert isinstance(payload, bytes)  # what the scheduler keeps of an event: nothing for a collector to scan
    (batch, outcome) = decode_all(payload)
    assert (
        batch.rows == ((0, {"v": 0.5}, 1.0),) and outcome.returned == 2.0 and type(outcome.returned) is float
    )
    with pytest.raises(TypeError, match="a value of type object cannot travel in a jupyter_dist event"):
        pack_event([encode_outcome(_completed(object()))])


def test_a_rank_result_never_goes_on_the_wire():
    outcome = Outcome(0, "a", TrialState.COMPLETED, result=object())
    assert "result" not in encode_outcome(outcome)["o"]


def _completed(returned=None, **last):
    return Outcome(0, "a", TrialState.COMPLETED, returned=returned, last=last)


@pytest.mark.parametrize(
    ("outcome", "value"),
    [
        (_completed(0.7, acc=0.1), 0.7),  # a returned number is the objective
        (_completed({"acc": 0.6, "loss": 2.0}, acc=0.1), 0.6),  # a returned dict holding it
        (_completed(None, acc=0.4), 0.4),  # None: the last reported value
        (_completed({"loss": 1.0}, acc=0.3), 0.3),  # a dict without it: the last reported value
    ],
)
def test_the_objective_picks_the_final_value(outcome, value):
    assert Objective("acc").judge(outcome).value == value


def test_a_missing_or_nan_objective_fails_the_trial_with_one_message():
    judged = Objective("acc").judge(_completed({"loss": 1.0}, loss=2.0))
    assert judged.state is TrialState.FAILED and judged.error_kind is ErrorKind.METRIC
    assert judged.error.startswith("the training function neither returned nor reported metric 'acc'")
    assert "(it reported/returned: loss)" in judged.error
    nan = Objective("acc").judge(_completed(math.nan))
    assert nan.state is TrialState.FAILED and nan.error == "the objective 'acc' is NaN"


def test_pruned_trials_keep_their_last_value_and_the_pruner_sees_the_same_metric():
    objective = Objective("acc", Direction.MIN)
    pruned = objective.judge(Outcome(0, "a", TrialState.PRUNED, last={"acc": 0.2}))
    assert pruned.value == 0.2 and pruned.state is TrialState.PRUNED
    assert (
        objective.intermediate({"acc": 0.3, "loss": 1}) == 0.3 and objective.intermediate({"loss": 1}) is None
    )
    assert objective.better(0.1, 0.2) and not objective.better(0.2, 0.1)
