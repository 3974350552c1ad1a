"""jupyter_dist.compare(), on the real LocalCluster: experiments side by side as a table (one row each) and a plotly
figure (best so far by trial and by wall time, parameter importances), from Experiments and stored names."""

from __future__ import annotations

import pytest

import jupyter_dist as jd
from jupyter_dist import space


def bowl(x=0.5, y=0.5):
    return -((x - 0.2) ** 2) - 0.1 * (y - 0.5) ** 2


SPACE = {"x": space.uniform(0, 1), "y": space.uniform(0, 1)}


def test_a_comparison_has_a_row_per_experiment_and_their_best_so_far(run_hpo, run_ablation):
    random = run_hpo(bowl, SPACE, trials=12, metric="score", sampler="random", seed=1, name="random")
    tpe = run_hpo(bowl, SPACE, trials=12, metric="score", sampler="tpe", seed=1, name="tpe")
    compared = jd.compare(random, "tpe")  # an Experiment, and a stored name
    summary = compared.summary.set_index("name")
    assert list(summary.index) == ["random", "tpe"]
    assert list(compared.summary.columns) == jd._compare.SUMMARY_COLUMNS
    for exp in (random, tpe):
        row = summary.loc[exp.name]
        assert row.kind == "hpo" and row.state == "completed" and row.trials == 12
        assert row.best_value == exp.best.value and row.best_params == exp.best.params
        assert row.duration > 0 and row.started.timestamp() == pytest.approx(exp.started)
    figure = compared.plot()
    by_trial = [t for t in figure.data if t.xaxis == "x"]
    by_time = [t for t in figure.data if t.xaxis == "x2"]
    importances = [t for t in figure.data if t.type == "bar"]
    assert [t.name for t in by_trial] == ["random", "tpe"] == [t.name for t in by_time]
    for trace, exp in zip(by_trial, (random, tpe), strict=True):
        assert list(trace.x) == list(range(1, 13))
        assert list(trace.y) == sorted(trace.y)  # best so far never gets worse (max)
        assert trace.y[-1] == exp.best.value
    assert list(by_time[0].x) == sorted(by_time[0].x) and by_time[0].x[-1] <= random.elapsed
    assert {tuple(sorted(t.x)) for t in importances} == {("x", "y")} and len(importances) == 2
    assert "<table" in compared._repr_html_() and "random" in repr(compared)


def test_what_cannot_be_compared_is_refused_naming_it(run_hpo):
    with pytest.raises(jd.ArgumentError, match="compare\\(\\) needs experiments"):
        jd.compare()
    with pytest.raises(jd.NotInStore):
        jd.compare("nope")
    with pytest.raises(jd.ArgumentError, match="got 3"):
        jd.compare(3)
