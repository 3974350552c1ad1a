"""The objective's scope (protocol.Objective.scope): which of a trial's reports make its value."""

from __future__ import annotations

import random
import statistics

import pytest

from jupyter_dist.protocol import SCOPES, Objective, Outcome, ScopedValue, TrialState


def reference(scope: str, values: list[float]) -> float:
    if scope == "last":
        return values[-1]
    if scope in ("max", "min"):
        return max(values) if scope == "max" else min(values)
    if scope == "avg":
        return statistics.fmean(values)
    k = int(scope.split("-")[1])
    return statistics.fmean(values[-k:])


@pytest.mark.parametrize("scope", SCOPES)
def test_each_scope_after_every_report_is_what_it_says(scope):
    values = [random.Random(7).uniform(-1, 1) * (i + 1) for i in range(23)]
    scoped = ScopedValue(scope)
    for n, value in enumerate(values, start=1):
        assert scoped.add(value) == pytest.approx(reference(scope, values[:n]))
    assert Objective("acc", scope=scope).scoped(values) == pytest.approx(
        [reference(scope, values[:n]) for n in range(1, len(values) + 1)]
    )


def completed(returned=None, **last):
    return Outcome(0, "a", TrialState.COMPLETED, returned=returned, last=last)


def test_a_returned_value_counts_as_the_final_report():
    reports = ScopedValue("avg")
    for value in (0.2, 0.4):
        reports.add(value)
    objective = Objective("acc", scope="avg")
    assert objective.judge(completed(0.9, acc=0.4), reports).value == pytest.approx(0.5)
    assert objective.judge(completed(acc=0.4), reports).value == pytest.approx(0.3)  # returned nothing
    assert reports.count == 2  # judging added the returned value to a copy
    assert Objective("acc", scope="max").judge(completed({"acc": 0.1}), _fed("max", 0.7)).value == 0.7


def test_a_stopped_trial_is_valued_by_the_scope_and_last_is_as_before():
    stopped = Outcome(0, "a", TrialState.PRUNED, last={"acc": 0.3})
    assert Objective("acc", scope="max").judge(stopped, _fed("max", 0.5, 0.3)).value == 0.5
    assert Objective("acc").judge(stopped, _fed("last", 0.5, 0.3)).value == 0.3
    assert Objective("acc").judge(completed(0.9, acc=0.3), _fed("last", 0.3)).value == 0.9


def test_an_unknown_scope_is_refused_naming_the_choices():
    from jupyter_dist.kinds import RunOptions

    with pytest.raises(ValueError, match=r"objective_scope='best': use one of 'last', 'max', 'min', 'avg'"):
        RunOptions(objective_scope="best").check()


def _fed(scope, *values):
    scoped = ScopedValue(scope)
    for value in values:
        scoped.add(value)
    return scoped
