"""hpo(warm_start=), on the real LocalCluster: earlier experiments' trials told to the sampler without running them
again, fitted to the new space, held by exp.study (live, loaded and resumed), with every sampler Optuna lets be
told trials; and what is refused before anything runs."""

from __future__ import annotations

import pytest

import jupyter_dist as jd
from jupyter_dist import space

SPACE = {"x": space.uniform(0.0, 1.0), "y": space.uniform(0.0, 1.0)}


def peak(x=0.5, y=0.5, z=0.0, steps=3, pause=0.0):
    import time

    for step in range(steps):
        time.sleep(pause)
        jd.report(step=step, score=-((x - 0.3) ** 2) - (y - 0.7) ** 2 - z - 0.1 / (step + 1))
    return -((x - 0.3) ** 2) - (y - 0.7) ** 2 - z


def told(exp) -> list:
    return [t for t in exp.study.trials if "warm_start" in t.user_attrs]


def traces(figure, prefix: str) -> list:
    return [t for t in figure.data if (t.name or "").startswith(prefix)]


def test_earlier_trials_are_told_without_running_fitted_to_the_new_space(run_hpo):
    earlier = run_hpo(
        peak, {**SPACE, "z": space.uniform(0, 0.1)}, trials=10, metric="score", seed=1, name="a"
    )
    narrower = {"x": space.uniform(0.0, 0.5), "y": space.uniform(0.0, 1.0)}  # z dropped, x narrowed
    outside = sum(1 for t in earlier.trial_records() if t.params["x"] > 0.5)
    exp = run_hpo(peak, narrower, trials=4, metric="score", sampler="tpe", warm_start="a", name="b")
    assert f"warm start: {10 - outside} trials from 'a'" in exp.status_line()
    assert (f"; {outside} outside the space" in exp.status_line()) == bool(outside)
    assert len(exp.trials) == 4  # only its own trials ran, and are its trials
    warm = told(exp)
    assert len(warm) == 10 - outside and {t.user_attrs["warm_start"] for t in warm} == {"a"}
    by_id = {t.trial_id: t for t in earlier.trial_records()}
    for t in warm:
        ran = by_id[t.user_attrs["trial_id"]]
        assert t.params == {"x": ran.params["x"], "y": ran.params["y"]}
        # a completed trial with its value; a pruned one (ASHA, the default pruner) with its curve
        assert t.value == (ran.value if ran.state == "completed" else None)
    # held by the stored experiment's study, and by a resumed run's
    assert len(told(jd.load("b"))) == len(warm)
    resumed = run_hpo(peak, narrower, trials=6, metric="score", name="b", resume=True)
    assert len(told(resumed)) == len(warm) and len(resumed.trials) == 6


def test_stopped_trials_are_told_as_pruned_with_their_curves(run_hpo):
    # two trials that would take 20 s each, stopped by the run's timeout (Optuna's study holds them as pruned)
    slow = {**SPACE, "steps": 400, "pause": 0.05}
    earlier = run_hpo(peak, slow, trials=2, metric="score", parallel=2, timeout=4, name="early")
    stopped = [r for r in earlier.trial_records() if r.state == "stopped"]
    assert stopped
    exp = run_hpo(peak, SPACE, trials=1, metric="score", warm_start=[earlier], name="later")
    by_id = {t.user_attrs["trial_id"]: t for t in told(exp)}
    for rec in stopped:
        assert by_id[rec.trial_id].state.name == "PRUNED"
        assert len(by_id[rec.trial_id].intermediate_values) == rec.steps
    # drawn hollow at their last value, as the run's own pruned trials are
    (warm,) = traces(exp.plot(), "warm start")
    assert list(warm.marker.symbol).count("circle-open") == len([r for r in stopped if r.steps])


@pytest.mark.parametrize("sampler", ["tpe", "gp", "cmaes", "nsga2", "nsga3", "random"])
def test_every_sampler_that_takes_told_trials_is_warm_started(run_hpo, sampler):
    run_hpo(peak, SPACE, trials=4, metric="score", seed=3, name=f"from-{sampler}")
    exp = run_hpo(peak, SPACE, trials=2, metric="score", sampler=sampler, warm_start=[f"from-{sampler}"])
    assert exp.state == "completed" and len(told(exp)) == 4 and len(exp.study.trials) == 6


def flagged(augment=True):
    return {"score": float(augment)}


def test_what_cannot_warm_start_is_refused_naming_it(run_hpo, run_ablation):
    run_hpo(peak, SPACE, trials=1, metric="score", name="max-score")
    with pytest.raises(jd.ArgumentError, match="no experiment named 'nope'"):
        run_hpo(peak, SPACE, trials=1, metric="score", warm_start="nope")
    with pytest.raises(
        jd.ArgumentError, match=r"'max-score' optimised score \(max\), this search score \(min\)"
    ):
        run_hpo(peak, SPACE, trials=1, metric="score", mode="min", warm_start="max-score")
    with pytest.raises(jd.ArgumentError, match="sampler='grid' runs every point"):
        run_hpo(
            peak,
            {"x": space.choice([0.1, 0.2])},
            trials=1,
            metric="score",
            sampler="grid",
            warm_start="max-score",
        )
    with pytest.raises(jd.ArgumentError, match="a function space"):
        run_hpo(
            peak,
            lambda t: {"x": t.suggest_float("x", 0, 1)},
            trials=1,
            metric="score",
            warm_start="max-score",
        )
    run_ablation(flagged, flags=["augment"], metric="score", name="study")
    with pytest.raises(jd.ArgumentError, match=r"'study' is not an hpo experiment \(its kind: ablation\)"):
        run_hpo(peak, SPACE, trials=1, metric="score", warm_start=["max-score", "study"])
    with pytest.raises(jd.ArgumentError, match="warm_start=3"):
        run_hpo(peak, SPACE, trials=1, metric="score", warm_start=3)


def test_the_views_draw_the_told_trials_apart_from_the_new_ones(run_hpo):
    from jupyter_dist.widgets._live import LiveView

    earlier = run_hpo(peak, SPACE, trials=5, metric="score", pruner=None, name="a")  # five whole curves
    cold = run_hpo(peak, SPACE, trials=2, metric="score", name="cold")
    assert not traces(cold.plot(), "warm start")  # a run that was not warm-started draws none
    assert not traces(LiveView(cold).figure, "warm start")
    views = []
    exp = run_hpo(
        peak,
        SPACE,
        trials=3,
        metric="score",
        pruner=None,
        warm_start=["a"],
        progress=lambda e: views.append(LiveView(e)) or views[-1],
    )
    # exp.plot()'s objective by trial: one grey trace, a point each, before the run's own trial 0
    (warm,) = traces(exp.plot(), "warm start")
    assert warm.name == "warm start (5 from 'a')"
    assert len(warm.y) == 5 and list(warm.x) == [-5, -4, -3, -2, -1]
    by_id = {r.trial_id: r for r in earlier.trial_records()}
    assert list(warm.y) == [by_id[int(t.split()[-1])].value for t in warm.text]
    # the live view's learning curves: one grey trace of the five curves (None between them), under the run's own
    (curves,) = traces(views[0].figure, "warm start")
    assert views[0].figure.data[0] is curves
    assert list(curves.x).count(None) == 5 and len(curves.x) == 5 * (3 + 1)
    assert len(views[0].figure.data) == 1 + 3
