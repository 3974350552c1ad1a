"""exp.study: a real, complete Optuna study of a finished experiment, live and loaded, read by Optuna's own tools;
parameter importances in exp.plot()."""

import time

import optuna
import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.search import param_importances

SPACE = {
    "lr": space.uniform(0.0, 1.0, step=0.05),
    "noise": space.uniform(0, 1),
    "opt": space.choice(["sgd", "adam"]),
}


def train(lr=0.5, noise=0.0, opt="sgd"):
    if lr > 0.9:
        raise RuntimeError("diverged")
    for step in range(3):
        time.sleep(0.005)
        jd.report(step=step, acc=lr * (step + 1) / 3 + 0.001 * noise)
    return None


def test_the_study_holds_every_finished_trial_live_and_loaded(run_hpo, tmp_path):
    exp = run_hpo(
        train, SPACE, trials=10, metric="acc", seed=4, name="tuned", pruner=None, enqueue=[{"lr": 0.95}]
    )
    live, loaded = exp.study, jd.load("tuned").study
    for study in (live, loaded):
        assert study.study_name == "tuned" and study.direction == optuna.study.StudyDirection.MAXIMIZE
        trials = study.trials
        assert [t.user_attrs["trial_id"] for t in trials] == list(range(10))
        records = {r.trial_id: r for r in exp.trial_records()}
        for frozen in trials:
            rec = records[frozen.user_attrs["trial_id"]]
            assert frozen.params == rec.params and set(frozen.distributions) == {"lr", "noise", "opt"}
            assert frozen.user_attrs["attempts"] == rec.attempts == 1
            assert frozen.user_attrs["duration"] == pytest.approx(rec.duration)
            if rec.state == "failed":
                assert frozen.state == optuna.trial.TrialState.FAIL and frozen.value is None
            else:
                assert frozen.state == optuna.trial.TrialState.COMPLETE and frozen.value == rec.value
                assert frozen.intermediate_values == {
                    s: pytest.approx(rec.params["lr"] * (s + 1) / 3, abs=2e-3) for s in range(3)
                }
        assert trials[0].state == optuna.trial.TrialState.FAIL  # the enqueued lr=0.95 diverged
        assert study.best_trial.user_attrs["trial_id"] == exp.best.trial_id
    # Optuna's own tools read it
    importances = optuna.importance.get_param_importances(loaded)
    assert set(importances) == {"lr", "noise", "opt"} and sum(importances.values()) == pytest.approx(1)
    assert param_importances(exp.record) == pytest.approx(importances)
    optuna.visualization.plot_optimization_history(loaded)
    optuna.visualization.plot_intermediate_values(loaded)
    optuna.visualization.plot_param_importances(loaded)
    # into an RDB storage, for optuna-dashboard: the one-liner the README gives
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(study_name=exp.name, storage=url, direction=exp.study.direction).add_trials(
        exp.study.trials
    )
    copied = optuna.load_study(study_name="tuned", storage=url)
    assert len(copied.trials) == 10 and copied.best_value == exp.best.value


def test_plot_shows_the_importances_once_enough_trials_completed(run_hpo):
    few = run_hpo(train, SPACE, trials=3, metric="acc", seed=1, pruner=None)
    assert param_importances(few.record) is None
    assert not [t for t in few.plot().data if t.type == "bar"]
    converging = {**SPACE, "lr": space.uniform(0.0, 0.9, step=0.05)}
    exp = run_hpo(train, converging, trials=8, metric="acc", seed=2, pruner=None)
    (bars,) = [t for t in exp.plot().data if t.type == "bar"]
    importances = param_importances(exp.record)
    assert dict(zip(bars.y, bars.x, strict=True)) == pytest.approx(importances)
    titles = [a.text for a in exp.plot().layout.annotations]
    assert "parameter importances for acc (PED-ANOVA, Optuna)" in titles


def test_only_an_hpo_experiment_has_a_study(run_ablation):
    def study(features=("a", "b")):
        return {"score": len(features)}

    exp = run_ablation(study, features=["a", "b"], metric="score")
    with pytest.raises(
        jd.ArgumentError, match="is a ablation run: only an hpo experiment has an Optuna study"
    ):
        _ = exp.study


def test_pruned_and_stopped_trials_are_pruned_in_the_study_and_unfinished_ones_left_out():
    from jupyter_dist.protocol import Direction, Objective, Outcome, ReportBatch, TrialState
    from jupyter_dist.search import study_of
    from jupyter_dist.store import ExperimentDefinition, InMemoryRecord

    record = InMemoryRecord(
        ExperimentDefinition("hpo", "states", Objective("acc", Direction.MIN), {"lr": space.uniform(0, 1)})
    )
    ends = {0: TrialState.COMPLETED, 1: TrialState.PRUNED, 2: TrialState.STOPPED, 3: None}
    for trial_id, state in ends.items():
        record.trial_started(trial_id, {"lr": trial_id / 10}, {})
        record.reports_arrived(ReportBatch(trial_id, "a", [[0, {"acc": 1.0}, 0.0], [1, {"acc": 0.5}, 0.0]]))
        if state is not None:
            record.trial_finished(Outcome(trial_id, "a", state, value=0.5, duration=1.0))
    study = study_of(record)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    assert [(t.user_attrs["trial_id"], t.state) for t in study.trials] == [
        (0, optuna.trial.TrialState.COMPLETE),
        (1, optuna.trial.TrialState.PRUNED),
        (2, optuna.trial.TrialState.PRUNED),
    ]
    assert all(t.intermediate_values == {0: 1.0, 1: 0.5} for t in study.trials)
    assert study.trials[0].duration.total_seconds() == pytest.approx(1.0)
