"""resume=True continues a stored run: finished trials kept and told to the search, unfinished ones run again,
the run stops at the requested total."""

import sqlite3

import pytest

import jupyter_dist as jd
from jupyter_dist import space

GRID = {"lr": space.choice([0.01, 0.02, 0.05, 0.1, 0.2, 0.5])}


def curve(lr=0.1):
    for step in range(3):
        jd.report(step=step, acc=lr * (step + 1))
    return {"acc": lr * 3}


def test_a_resumed_grid_search_runs_only_the_points_it_has_not_run(run_hpo, fresh_store):
    first = run_hpo(curve, GRID, trials=3, metric="acc", sampler="grid", name="sweep")
    kept = first.trials[["trial_id", "params_lr", "value"]]
    exp = run_hpo(curve, GRID, trials=6, metric="acc", sampler="grid", name="sweep", resume=True)
    assert exp.id == first.id and exp.name == "sweep" and exp.state == "completed"
    assert len(exp.trials) == 6
    assert sorted(exp.trials.params_lr) == sorted(
        GRID["lr"].options
    )  # each point once: the first 3 were told
    assert exp.trials[["trial_id", "params_lr", "value"]].head(3).equals(kept)  # kept as they were
    assert exp.best.params == {"lr": 0.5}
    listing = jd.experiments().set_index("name")
    assert len(listing) == 1 and listing.loc["sweep", "trials_done"] == 6
    assert len(jd.load("sweep").history) == 18


def test_resume_says_what_is_wrong(run_hpo):
    with pytest.raises(jd.ArgumentError, match="needs name="):
        run_hpo(curve, GRID, trials=2, metric="acc", resume=True)
    with pytest.raises(jd.StoreError, match="no experiment named 'nope' to resume"):
        run_hpo(curve, GRID, trials=2, metric="acc", name="nope", resume=True)
    run_hpo(curve, GRID, trials=1, metric="acc", name="sweep")
    with pytest.raises(jd.ArgumentError, match="same metric and mode"):
        run_hpo(curve, GRID, trials=2, metric="acc", mode="min", name="sweep", resume=True)
    with pytest.raises(jd.ArgumentError, match="same search space"):
        run_hpo(curve, {"lr": 0.1}, trials=2, metric="acc", name="sweep", resume=True)
    with pytest.raises(jd.StoreError, match="already in the store"):
        run_hpo(curve, GRID, trials=2, metric="acc", name="sweep")


def test_an_ablation_study_resumes_the_variants_not_yet_run(run_ablation, fresh_store):
    def study(features=("a", "b", "c")):
        jd.report(step=0, score=len(features))
        return {"score": len(features)}

    first = run_ablation(study, features=["a", "b", "c"], metric="score", name="abl", parallel=1, timeout=60)
    assert first.state == "completed"
    # as if its kernel had died after two variants: the store keeps them, the rest are gone
    with sqlite3.connect(fresh_store) as conn:
        conn.execute("DELETE FROM trials WHERE trial_id >= 2")
        conn.execute("UPDATE experiments SET state = 'running', owner_pid = 999999999")
    assert jd.experiments().state.tolist() == ["interrupted"]
    exp = run_ablation(study, features=["a", "b", "c"], metric="score", name="abl", resume=True)
    assert exp.state == "completed" and exp.id == first.id
    assert exp.summary().equals(first.summary())
    assert sorted(exp.trials.trial_id) == [0, 1, 2, 3]
