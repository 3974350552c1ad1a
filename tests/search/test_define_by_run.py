"""Define-by-run (conditional) search spaces on the real LocalCluster: a trial gets exactly what its branch
suggested, stored with its distributions, checked before any work starts, resumable."""

import json
import math
import sqlite3
import time

import pytest

import jupyter_dist as jd


def train(opt="adam", lr=0.1, **given):
    """Reports which arguments it was given: an inactive parameter must be absent, not None."""
    time.sleep(0.01)
    jd.report(
        step=0, acc=lr, has_momentum=float("momentum" in given), has_act=float(given.get("act") == "relu")
    )
    return {"acc": lr + given.get("momentum", 0.0)}


def conditional(trial):
    opt = trial.suggest_categorical("opt", ["sgd", "adam"])
    trial.suggest_float("lr", 1e-3, 1e-1, log=True)
    if opt == "sgd":
        trial.suggest_float("momentum", 0.0, 0.9, step=0.1)
    return {"act": "relu"}


def test_a_conditional_space_passes_only_the_parameters_its_branch_suggested(run_hpo):
    exp = run_hpo(train, conditional, trials=8, metric="acc", seed=3, name="branches")
    records = exp.trial_records()
    assert {r.params["opt"] for r in records} == {"sgd", "adam"}  # seed 3 takes both branches
    history = exp.history.pivot_table(index="trial_id", columns="metric", values="value")
    for rec in records:
        assert ("momentum" in rec.params) == (rec.params["opt"] == "sgd")  # absent, not None
        assert history.loc[rec.trial_id, "has_momentum"] == float(rec.params["opt"] == "sgd")
        assert history.loc[rec.trial_id, "has_act"] == 1.0 and rec.params["act"] == "relu"
        assert set(rec.distributions) == set(rec.params) - {"act"}  # the returned constant is no distribution
    table = exp.trials.set_index("trial_id")
    adam = table[table.params_opt == "adam"]
    assert (
        adam.params_momentum.isna().all() and table[table.params_opt == "sgd"].params_momentum.notna().all()
    )
    # the store keeps each trial's own distributions, and its params without the inactive ones
    loaded = {r.trial_id: r for r in jd.load("branches").trial_records()}
    for rec in records:
        assert loaded[rec.trial_id].params == rec.params
        assert loaded[rec.trial_id].distributions == rec.distributions
    assert exp.space == {} and jd.load("branches").space == {}
    (coordinates,) = [t for t in exp.plot().data if t.type == "parcoords"]
    assert {d.label for d in coordinates.dimensions} >= {"opt", "lr", "momentum", "acc"}


def test_a_space_function_is_checked_before_any_work_starts(run_hpo):
    def broken(trial):
        trial.suggest_int("layers", 1, 3)
        return {"width": 64 // 0}

    def misspelt(trial):
        if trial.suggest_categorical("opt", ["sgd", "adam"]) == "sgd":
            trial.suggest_float("momentun", 0.0, 0.9)

    def strict(opt="adam", lr=0.1):
        return lr

    def returns_a_list(trial):
        trial.suggest_float("lr", 0.1, 1)
        return ["lr"]

    started = time.monotonic()
    with pytest.raises(
        jd.SearchSpaceError, match=r"broken\(trial\) raised ZeroDivisionError: integer division"
    ):
        run_hpo(train, broken, trials=2, metric="acc")
    # only one branch suggests it: the dry run's 8 random trials find it
    with pytest.raises(
        jd.SearchSpaceError, match=r"momentun: strict\(\) has no argument 'momentun' \(it accepts: lr, opt\)"
    ):
        run_hpo(strict, misspelt, trials=2, metric="acc")
    with pytest.raises(
        jd.SearchSpaceError, match=r"returns_a_list\(trial\) returned a list; it returns None or a dict"
    ):
        run_hpo(train, returns_a_list, trials=2, metric="acc")
    with pytest.raises(jd.SearchSpaceError, match="sampler='grid' needs a dict of space.choice"):
        run_hpo(train, conditional, trials=2, metric="acc", sampler="grid")
    assert time.monotonic() - started < 30
    assert jd.experiments().empty  # refused without running a trial: no run was recorded


def test_a_function_space_run_resumes_with_its_stored_distributions(run_hpo):
    first = run_hpo(train, conditional, trials=3, metric="acc", seed=1, name="cond")
    kept = {r.trial_id: r.params for r in first.trial_records()}
    with pytest.raises(
        jd.ArgumentError, match="searched a function space\\(trial\\); resume it with the same kind"
    ):
        run_hpo(train, {"lr": jd.space.uniform(0.001, 0.1)}, trials=5, metric="acc", name="cond", resume=True)
    exp = run_hpo(train, conditional, trials=5, metric="acc", seed=1, name="cond", resume=True)
    assert exp.id == first.id and exp.state == "completed" and len(exp.trials) == 5
    assert {r.trial_id: r.params for r in exp.trial_records() if r.trial_id in kept} == kept
    study = jd.load("cond").study
    assert len(study.trials) == 5
    for frozen in study.trials:
        assert set(frozen.distributions) == set(frozen.params)
        assert ("momentum" in frozen.params) == (frozen.params["opt"] == "sgd")
        assert math.isfinite(frozen.value)


def test_a_cut_function_space_run_runs_its_unfinished_enqueued_trial_again_and_not_its_configuration(
    run_hpo, fresh_store
):
    known = [{"opt": "sgd", "momentum": 0.5}, {"opt": "adam"}]
    run_hpo(train, conditional, trials=3, metric="acc", parallel=1, name="cut", enqueue=known)
    # as if its kernel had died while trial 1 ran: the store says it runs, trial 2 never started
    with sqlite3.connect(fresh_store) as conn:
        conn.execute("DELETE FROM trials WHERE trial_id = 2")
        (text,) = conn.execute("SELECT record FROM trials WHERE trial_id = 1").fetchone()
        record = json.loads(text)
        record.update(state="running", value=None, duration=None)
        conn.execute(
            "UPDATE trials SET state = 'running', record = ? WHERE trial_id = 1", (json.dumps(record),)
        )
        conn.execute("UPDATE experiments SET state = 'running', owner_pid = 999999999")
    interrupted = jd.load("cut").trial_records()[1]
    assert interrupted.state == "interrupted"
    exp = run_hpo(
        train, conditional, trials=4, metric="acc", parallel=1, name="cut", enqueue=known, resume=True
    )
    records = {r.trial_id: r for r in exp.trial_records()}
    assert sorted(records) == [0, 1, 2, 3, 4] and exp.done == 4
    # trial 1 runs again as trial 2, with its parameters and label; {"opt": "adam"} is not enqueued once more
    assert records[2].params == interrupted.params and records[2].labels == {"enqueued": {"opt": "adam"}}
    assert records[2].distributions == interrupted.distributions
    assert [records[i].labels for i in (3, 4)] == [{}, {}]
    assert len(exp.study.trials) == 4  # the interrupted trial is left out of the study
