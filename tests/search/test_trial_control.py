"""The trial loop's control with real trials on the session's LocalCluster: callbacks, a per-trial stop rule, an
experiment-level target, the objective's scope; from the API, stored, resumed, and from %%distribute."""

from __future__ import annotations

import time

import optuna
import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.search import objective_curves


def rises(x=0.5, steps=20, pause=0.01):
    """acc climbs towards x: step s reports x * (s + 1) / steps."""
    for step in range(steps):
        time.sleep(pause)
        jd.report(step=step, acc=x * (step + 1) / steps)


class Recorder(jd.Callback):
    def __init__(self):
        self.heard = []

    def on_experiment_start(self, exp):
        self.heard.append(("experiment_start", exp.state))

    def on_trial_start(self, exp, trial):
        self.heard.append(("trial_start", trial.trial_id, dict(trial.params)))

    def on_trial_report(self, exp, trial, step, metrics):
        self.heard.append(("report", trial.trial_id, step, metrics["acc"]))

    def on_trial_end(self, exp, trial):
        self.heard.append(("trial_end", trial.trial_id, trial.state, trial.value))

    def on_experiment_end(self, exp):
        self.heard.append(("experiment_end", exp.state))


class EndsOnly(jd.Callback):
    """Overrides no report hook: reports need not reach the loop for it."""

    def __init__(self):
        self.ended = []

    def on_trial_end(self, exp, trial):
        self.ended.append(trial.trial_id)


# --- callbacks ---------------------------------------------------------------------------------------------------
def test_callbacks_hear_every_trial_and_report_in_order_without_a_pruner(run_hpo):
    recorder, ends = Recorder(), EndsOnly()
    exp = run_hpo(
        rises,
        {"x": space.uniform(0, 1)},
        trials=3,
        metric="acc",
        pruner=None,  # the source does not prune: the reports reach the hooks all the same
        parallel=2,
        callbacks=[recorder, ends],
    )
    heard = recorder.heard
    assert heard[0] == ("experiment_start", "running") and heard[-1] == ("experiment_end", "completed")
    for rec in exp.trial_records():
        mine = [
            h
            for h in heard
            if h[0] != "experiment_start" and h[0] != "experiment_end" and h[1] == rec.trial_id
        ]
        assert mine[0] == ("trial_start", rec.trial_id, rec.params)
        assert [h[2] for h in mine[1:-1]] == list(range(20))  # every report, in step order
        assert mine[-1] == ("trial_end", rec.trial_id, "completed", rec.value)
    assert sorted(ends.ended) == [0, 1, 2]
    stored = jd.load(exp.name).record.definition.details["control"]
    assert stored == {
        "callbacks": ["Recorder", "EndsOnly"],
        "stop": None,
        "target": None,
        "objective_scope": "last",
    }


class BreaksAtTheFirstEnd(jd.Callback):
    def on_trial_end(self, exp, trial):
        raise ValueError("the tracking server is down")


def test_a_hook_that_raises_fails_the_run_naming_it_and_keeps_what_was_recorded(run_hpo):
    with pytest.raises(jd.ExperimentFailed) as failed:
        run_hpo(
            rises,
            {"x": space.uniform(0, 1)},
            trials=4,
            metric="acc",
            parallel=1,
            callbacks=[BreaksAtTheFirstEnd()],
        )
    message = str(failed.value)
    assert (
        "callback BreaksAtTheFirstEnd.on_trial_end raised ValueError: the tracking server is down" in message
    )
    assert isinstance(failed.value.__cause__, ValueError)  # the user's traceback
    exp = failed.value.experiment
    assert exp.state == "failed" and "BreaksAtTheFirstEnd.on_trial_end" in exp.error
    first = exp.trial_records()[0]
    assert first.state == "completed" and first.steps == 20 and len(exp.trial_records()) == 1
    stored = jd.load(exp.name)
    assert stored.state == "failed" and stored.trials.state.tolist()[0] == "completed"


def misses_the_metric_then_trains(x=0.0):
    if x < 0.5:
        return {"other": 1.0}  # the objective's metric is missing: the run fails at once
    time.sleep(5)
    return {"acc": 1.0}


def test_a_failed_run_with_callbacks_stores_its_running_trials_interrupted(run_hpo, fresh_store):
    import sqlite3

    ends = EndsOnly()
    with pytest.raises(jd.ExperimentFailed, match="neither returned nor reported metric 'acc'"):
        run_hpo(
            misses_the_metric_then_trains,
            {"x": space.choice([0.1, 0.9])},
            sampler="grid",
            metric="acc",
            parallel=2,
            callbacks=[ends],
            name="fails",
        )
    # what the store itself says (experiments() counts from its column), not load()'s reading of it
    with sqlite3.connect(fresh_store) as db:
        states = dict(db.execute("SELECT trial_id, state FROM trials ORDER BY trial_id").fetchall())
    assert sorted(states.values()) == ["failed", "interrupted"]


class StopsAfterTwo(jd.Callback):
    def on_trial_end(self, exp, trial):
        if exp.done >= 2:
            exp.stop()


def test_a_hook_may_stop_the_experiment(run_hpo):
    exp = run_hpo(
        rises, {"x": space.uniform(0, 1)}, trials=10, metric="acc", parallel=1, callbacks=[StopsAfterTwo()]
    )
    assert exp.state == "stopped" and len(exp.trials) == 2


def test_an_optuna_callback_is_called_with_the_search_study_and_the_told_trial(run_hpo):
    import optuna

    heard = []

    def log_trial(study, frozen_trial):  # what Study.optimize(callbacks=[...]) calls, e.g. MLflowCallback
        heard.append(
            (study.direction, frozen_trial.state, frozen_trial.value, len(study.trials), frozen_trial)
        )

    exp = run_hpo(
        rises,
        {"x": space.uniform(0, 1)},
        trials=3,
        metric="acc",
        parallel=1,
        pruner=None,
        callbacks=[log_trial],
    )
    assert len(heard) == 3
    study = jd.load(exp.name).study
    for (direction, state, value, told, frozen), rec in zip(heard, exp.trial_records(), strict=True):
        assert direction == optuna.study.StudyDirection.MAXIMIZE and state == optuna.trial.TrialState.COMPLETE
        assert value == rec.value and frozen.params["x"] == rec.params["x"]
        assert told == rec.trial_id + 1  # the study as it stood at that trial's end
        # its intermediate values, though no pruner judged them: as the loaded run's study holds them
        assert frozen.intermediate_values == study.trials[rec.trial_id].intermediate_values
        assert len(frozen.intermediate_values) == 20
    (stored,) = jd.load(exp.name).record.definition.details["control"]["callbacks"]
    assert stored.endswith("<locals>.log_trial")  # its qualified name, as a Callback's class is kept


def test_callbacks_that_cannot_be_called_are_refused_before_any_work(run_hpo, run_ablation):
    def on_trial(study, frozen_trial):
        pass

    with pytest.raises(ValueError, match=r"callbacks=\[.*on_trial\]: a plain function is an Optuna callback"):
        run_ablation(variant, features=["a", "b"], metric="acc", callbacks=[on_trial])
    assert jd.experiments().empty  # nothing was recorded
    with pytest.raises(
        ValueError, match=r"callbacks=\[Recorder\]: that is the class; give an instance, Recorder\(\)"
    ):
        run_hpo(rises, {"x": space.uniform(0, 1)}, metric="acc", callbacks=[Recorder])
    with pytest.raises(ValueError, match="give a list of jupyter_dist.Callback instances"):
        run_hpo(rises, {"x": space.uniform(0, 1)}, metric="acc", callbacks=Recorder())


# --- the per-trial stop rule ----------------------------------------------------------------------------------------
def test_a_trial_reaching_its_stop_rule_ends_early_and_completed(run_hpo):
    exp = run_hpo(
        rises,
        {"x": space.choice([1.0]), "steps": 100, "pause": 0.02},
        trials=2,
        metric="acc",
        pruner=None,
        stop={"acc": 0.3},
    )
    for rec in exp.trial_records():
        # acc reaches 0.3 at step 29; the stop lands within a few steps (each 20 ms)
        assert rec.state == "completed" and 30 <= rec.steps < 100
        assert (
            rec.value >= 0.3 and rec.value == rec.last["acc"]
        )  # its last report, as a completed trial's value
        assert rec.stopped_at is not None
    assert exp.best.value >= 0.3


def loss_falls(x=0.5, steps=100):
    for step in range(steps):
        time.sleep(0.02)
        jd.report(step=step, loss=1.0 - step / steps, epoch=step)


def test_the_minimised_objective_stops_at_or_below_and_a_function_decides_on_any_metric(run_hpo):
    exp = run_hpo(
        loss_falls, {"x": space.uniform(0, 1)}, trials=1, metric="loss", mode="min", stop={"loss": 0.8}
    )
    (rec,) = exp.trial_records()
    assert rec.state == "completed" and rec.value <= 0.8 and rec.steps < 100
    seen = []

    def at_epoch_10(trial_id, metrics):
        seen.append(trial_id)
        return metrics["epoch"] >= 10

    exp = run_hpo(
        loss_falls, {"x": space.uniform(0, 1)}, trials=1, metric="loss", mode="min", stop=at_epoch_10
    )
    (rec,) = exp.trial_records()
    assert rec.state == "completed" and 11 <= rec.steps < 100 and set(seen) == {0}
    assert jd.load(exp.name).record.definition.details["control"]["stop"].endswith("at_epoch_10")


def test_a_stop_function_that_raises_fails_the_run_naming_it(run_hpo):
    def broken(trial_id, metrics):
        raise KeyError("val_acc")

    with pytest.raises(jd.ExperimentFailed, match=r"stop=.*broken raised KeyError: 'val_acc' \(trial 0"):
        run_hpo(rises, {"x": space.uniform(0, 1)}, trials=2, metric="acc", parallel=1, stop=broken)


@pytest.mark.parametrize(
    "stop, message",
    [
        ({"acc": "0.9"}, "the threshold of 'acc' is '0.9'; give a number"),
        ({("acc",): 0.9}, "is not a metric's name"),
    ],
)
def test_a_malformed_stop_rule_is_refused_before_any_work(run_hpo, stop, message):
    with pytest.raises(ValueError, match=message):
        run_hpo(rises, {"x": space.uniform(0, 1)}, metric="acc", stop=stop)
    assert jd.experiments().empty  # nothing ran, nothing was recorded


# --- the experiment's target ----------------------------------------------------------------------------------------
def quick_when_good(x=0.5):
    """Good configurations (x >= 0.9) end at once; the others train for a while (1.2 s)."""
    for step in range(5 if x >= 0.9 else 60):
        time.sleep(0.02)
        jd.report(step=step, acc=x)
    return x


def test_a_trial_at_the_target_ends_the_experiment_completed_and_says_so(run_hpo):
    # The seeded sampler proposes 0.2, 0.2, 0.2, 0.95, ...: trials 0 and 1 complete, then trial 3 reaches the
    # target while trial 2 runs.
    exp = run_hpo(
        quick_when_good,
        {"x": space.choice([0.1, 0.95, 0.2, 0.3])},
        trials=30,
        metric="acc",
        pruner=None,
        parallel=2,
        seed=4,
        target=0.9,
    )
    assert exp.state == "completed" and exp.best.trial_id == 3 and exp.best.value == 0.95
    assert exp.message == "target acc >= 0.9 reached by trial 3 (acc=0.95)" and exp.error is None
    assert exp.trials.state.tolist() == [
        "completed",
        "completed",
        "stopped",
        "completed",
    ]  # none started after
    assert exp.message in exp.status_line()  # the views' final line
    stored = jd.load(exp.name)
    assert stored.state == "completed" and stored.message == exp.message and stored.error is None


def test_a_minimised_target_and_bad_targets(run_hpo):
    exp = run_hpo(
        lambda x=0.0: x,
        {"x": space.choice([0.5, 0.05])},
        trials=20,
        metric="loss",
        mode="min",
        parallel=1,
        sampler="grid",
        target=0.1,
    )
    assert exp.state == "completed" and "target loss <= 0.1 reached" in exp.message
    for bad in ("0.9", float("nan"), True):
        with pytest.raises(ValueError, match="target=.*: give the objective's value to stop at"):
            run_hpo(rises, {"x": space.uniform(0, 1)}, metric="acc", target=bad)


# --- the objective's scope ------------------------------------------------------------------------------------------
def peaks(x=0.5):
    """acc peaks at x at step 2, then falls to 0.1."""
    for step, acc in enumerate([0.2, 0.4, x, 0.3, 0.1]):
        time.sleep(0.01)
        jd.report(step=step, acc=acc)


def test_scope_max_values_each_trial_by_its_best_report_for_best_optuna_and_the_pruner(run_hpo):
    exp = run_hpo(
        peaks,
        {"x": space.choice([0.6, 0.9])},
        sampler="grid",
        trials=None,
        metric="acc",
        parallel=1,
        # with "last", step 4's 0.1 is below 0.15 and the trial would be pruned; its max (>= 0.2) never is
        pruner=optuna.pruners.ThresholdPruner(lower=0.15),
        objective_scope="max",
    )
    t = exp.trials
    assert set(t.state) == {"completed"}
    assert sorted(t.value) == [0.6, 0.9] and exp.best.value == 0.9 and exp.best.params == {"x": 0.9}
    last = run_hpo(
        peaks,
        {"x": space.choice([0.6])},
        metric="acc",
        trials=1,
        pruner=optuna.pruners.ThresholdPruner(lower=0.15),
    )
    assert last.trials.state.tolist() == ["pruned"]  # the same trial under "last"


def avg_then_returns(x=0.5):
    for step, acc in enumerate([0.2, 0.4]):
        jd.report(step=step, acc=acc)
    return x


def test_a_returned_value_counts_as_the_final_report_of_the_scope(run_hpo):
    exp = run_hpo(avg_then_returns, {"x": space.choice([0.9])}, metric="acc", trials=1, objective_scope="avg")
    assert exp.best.value == pytest.approx(0.5)  # (0.2 + 0.4 + 0.9) / 3


def test_a_resume_runs_with_the_stored_control_and_refuses_another_scope(run_hpo):
    space_ = {"x": space.choice([0.6, 0.7, 0.8])}
    first = run_hpo(
        peaks,
        space_,
        metric="acc",
        trials=2,
        name="scoped",
        objective_scope="max",
        target=0.99,
        stop={"acc": 5.0},
    )
    assert first.state == "completed"
    resumed = run_hpo(peaks, space_, metric="acc", trials=3, name="scoped", resume=True)
    control = resumed.record.definition.details["control"]
    assert control == {"callbacks": [], "stop": {"acc": 5.0}, "target": 0.99, "objective_scope": "max"}
    assert resumed.record.definition.objective.scope == "max"
    assert all(rec.value == rec.params["x"] for rec in resumed.trial_records())  # each valued by its peak
    # a resume tells Optuna the stored curves as the pruner saw them: the running max at each step (the stored
    # definition keeps the scope); the loaded run's study holds the same
    prior = jd.load("scoped").record
    assert prior.definition.objective.scope == "max"
    curves = objective_curves(prior, prior.trial_records())
    peak = prior.trial(0).params["x"]
    assert curves[0] == {0: 0.2, 1: 0.4, 2: peak, 3: peak, 4: peak}
    assert jd.load("scoped").study.trials[0].intermediate_values == curves[0]
    with pytest.raises(ValueError, match="objective_scope='avg': 'scoped' ran with objective_scope='max'"):
        run_hpo(peaks, space_, metric="acc", trials=4, name="scoped", resume=True, objective_scope="avg")


# --- the other kinds -------------------------------------------------------------------------------------------------
def ranks_report(steps=100):
    for step in range(steps):
        time.sleep(0.02)
        jd.report(step=step, acc=step / steps)
    return "done"


def test_a_data_parallel_run_stops_at_its_goal_completed_and_calls_back(run_ddp):
    recorder = Recorder()
    exp = run_ddp(ranks_report, workers=2, metric="acc", stop={"acc": 0.2}, callbacks=[recorder])
    (rec,) = exp.trial_records()
    assert exp.state == "completed" and rec.state == "completed" and 21 <= rec.steps < 100
    kinds = [h[0] for h in recorder.heard]
    assert kinds[:2] == ["experiment_start", "trial_start"] and kinds[-2:] == ["trial_end", "experiment_end"]
    assert kinds.count("report") == rec.steps  # rank 0's reports, each heard once


def variant(features=("a", "b"), seed=0):
    for step, acc in enumerate([0.5, 0.2 * len(features), 0.1]):
        jd.report(step=step, acc=acc)


def test_an_ablation_study_compares_its_variants_under_the_scope_and_calls_back(run_ablation):
    ends = EndsOnly()
    exp = run_ablation(variant, features=["a", "b"], metric="acc", objective_scope="max", callbacks=[ends])
    values = {rec.labels["ablated"]: rec.value for rec in exp.trial_records()}
    assert values == {"baseline": 0.5, "a": 0.5, "b": 0.5}  # the peak of each, not the last (0.1)
    assert sorted(ends.ended) == sorted(rec.trial_id for rec in exp.trial_records())


# --- %%distribute -------------------------------------------------------------------------------------------------
BODY = """
import time
import jupyter_dist as jd
from jupyter_dist import space

grid = {"x": space.choice([0.2, 0.95])}

class Ends(jd.Callback):
    def __init__(self):
        self.ended = []
    def on_trial_end(self, exp, trial):
        self.ended.append(trial.state)

cbs = [Ends()]
rule = {"acc": 0.5}

def train(x=0.5):
    for step in range(300):
        time.sleep(0.01)
        jd.report(step=step, acc=x * step / 10)
"""


def test_the_magic_takes_callbacks_and_a_stop_rule_by_name_a_target_and_a_scope(client):
    from IPython.testing import globalipapp

    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "jupyter_dist")
    line = (
        "hpo --trials 2 --metric acc --sampler grid --pruner none --callbacks cbs --stop rule --target 100 "
        "--objective-scope max --out controlled"
    )
    ip.run_cell_magic("distribute", line, BODY)
    exp = ip.user_ns["controlled"]
    assert ip.user_ns["cbs"][0].ended == ["completed", "completed"]
    assert all(
        rec.state == "completed" and rec.steps < 300 for rec in exp.trial_records()
    )  # both met acc >= 0.5 (x=0.2 at step 25): stopped well before their end, however loaded the machine
    control = exp.record.definition.details["control"]
    assert control == {"callbacks": ["Ends"], "stop": {"acc": 0.5}, "target": 100.0, "objective_scope": "max"}
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="--callbacks nothing: no variable named 'nothing'"):
        ip.run_cell_magic("distribute", "hpo --metric acc --callbacks nothing", BODY)
    with pytest.raises(UsageError, match="--target: not an option of %%distribute ablation"):
        ip.run_cell_magic("distribute", "ablation --metric acc --features a --target 1", BODY)
