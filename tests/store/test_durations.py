"""One duration and one state per run: the live Experiment, load(), experiments(), the REST API's detail and a
resumed run say the same (issue 25: 0.6 s live, 1.9 s stored, 0.5 s after a resume; "1 running" live,
"1 interrupted" stored)."""

from __future__ import annotations

import time

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.store import StoreReader

SPACE = {"x": space.uniform(0.0, 1.0)}


def steady(x=0.5):
    for step in range(3):
        time.sleep(0.05)
        jd.report(step=step, score=x)
    return x


def one_fails_one_hangs(x=0.5):
    if x < 0.5:
        return {"other": 1.0}  # no "score": the run fails on this trial
    time.sleep(3)
    return x


def durations(exp, store) -> dict[str, float]:
    listed = jd.experiments().set_index("name").loc[exp.name, "duration"]
    return {
        "live": exp.elapsed,
        "status line": float(exp.status_line().rsplit(" · ", 1)[1].rstrip("s")),
        "load": jd.load(exp.name).elapsed,
        "experiments": listed,
        "rest": StoreReader(store).detail(exp.id)["duration"],
    }


def assert_agree(seen: dict[str, float]) -> None:
    for seconds in seen.values():
        assert seconds == pytest.approx(seen["live"], abs=0.051), seen  # the status line rounds to 0.1 s


def test_a_run_lasts_as_long_live_loaded_listed_and_served(run_hpo, fresh_store):
    called = time.time()
    exp = run_hpo(steady, SPACE, trials=2, metric="score", name="steady", pruner=None)
    returned = time.time()
    seen = durations(exp, fresh_store)
    assert_agree(seen)
    # From the call: connecting to the cluster and checking the function are part of the run's time.
    assert exp.started >= called and exp.elapsed <= returned - called
    assert exp.elapsed >= (returned - called) - 0.5


def test_a_resumed_run_adds_its_time_to_the_earlier_runs_and_not_the_gap(run_hpo, fresh_store):
    first = run_hpo(steady, SPACE, trials=2, metric="score", name="again", pruner=None)
    earlier = first.elapsed
    time.sleep(1.5)  # the kernel was away
    exp = run_hpo(steady, SPACE, trials=4, metric="score", name="again", pruner=None, resume=True)
    seen = durations(exp, fresh_store)
    assert_agree(seen)
    assert exp.started == first.started  # the experiment's first start
    span = exp.ended - exp.started
    assert exp.elapsed > earlier
    assert span - exp.elapsed >= 1.5  # the gap is not run time


def test_a_trial_left_running_by_a_failed_run_is_interrupted_live_and_stored(run_hpo, fresh_store):
    grid = {"x": space.choice([0.1, 0.9])}
    with pytest.raises(jd.ExperimentFailed) as failed:
        run_hpo(
            one_fails_one_hangs, grid, trials=2, metric="score", name="broken", sampler="grid", parallel=2
        )
    live = failed.value.experiment
    loaded = jd.load("broken")
    served = StoreReader(fresh_store).detail(live.id)
    assert live.counts() == loaded.counts()
    assert live.counts()["running"] == 0 and live.counts()["interrupted"] == 1
    assert "running" not in live.status_line() and "1 interrupted" in live.status_line()
    by_id = {t["trial_id"]: t for t in served["trials"]}
    for rec in live.trial_records():
        assert (
            by_id[rec.trial_id]["state"] == rec.state.value == loaded.record.trial(rec.trial_id).state.value
        )
        assert by_id[rec.trial_id]["duration"] == rec.duration == loaded.record.trial(rec.trial_id).duration
    assert list(live.trials.state) == list(loaded.trials.state)
    assert list(live.trials.duration) == list(loaded.trials.duration)
    assert_agree(durations(live, fresh_store))
