"""Retries of a trial whose function raised (max_failures=), on the real LocalCluster."""

import os

import pytest
from tickets import ticket

import jupyter_dist as jd


def flaky(x=0.0, folder="", failures=2):
    attempt = ticket(folder)
    for step in range(3):
        jd.report(step=step, v=x + step + attempt)
    if attempt < failures:
        raise ConnectionError(f"flaky read, attempt {attempt}")
    return x + attempt


def test_a_trial_raising_twice_then_succeeding_with_max_failures_2_completes_in_3_attempts(
    client, tmp_path, run_hpo
):
    import optuna

    told = []

    class Listening(optuna.samplers.RandomSampler):
        def after_trial(self, study, trial, state, values):
            told.append((state.name, values))

    class Retries(jd.Callback):
        heard = []

        def on_trial_retry(self, exp, trial, error):
            self.heard.append((trial.trial_id, trial.state, error.strip().splitlines()[-1]))

    space_ = {"x": jd.space.uniform(1, 1.001), "folder": str(tmp_path)}
    exp = run_hpo(
        flaky, space_, trials=1, metric="v", max_failures=2, sampler=Listening(), callbacks=[Retries()]
    )
    assert Retries.heard == [
        (0, "running", "ConnectionError: flaky read, attempt 0"),
        (0, "running", "ConnectionError: flaky read, attempt 1"),
    ]  # the callbacks heard of each retry, with the attempt's traceback
    t = exp.trials.iloc[0]
    assert t.state == "completed" and t.value == pytest.approx(t.params_x + 2)
    assert told == [("COMPLETE", [t.value])]  # the sampler heard of the final outcome only
    assert t.attempts == 3 and t.error is None
    h = exp.history
    assert sorted(h.attempt.unique()) == [0, 1, 2]
    assert list(h[h.attempt == 2].value - t.params_x) == pytest.approx(
        [2.0, 3.0, 4.0]
    )  # the curve started again
    record = exp.record.trial_records()[0]
    stderr = "".join(record.stderr)
    assert stderr.count("ConnectionError: flaky read") == 2  # each failed attempt's traceback stays visible
    assert (
        "--- attempt 3 (attempt 2 raised, its traceback is in stderr; retry 2 of max_failures=2) ---"
        in stderr
    )
    assert exp.record.definition.details["max_failures"] == 2
    stored = jd.load(exp.record.definition.id)
    assert stored.trials.iloc[0].attempts == 3
    assert stored.logs(0).count("ConnectionError: flaky read") == 2  # the tracebacks are stored too


def test_a_trial_raising_more_often_than_max_failures_fails_with_the_last_traceback(
    client, tmp_path, run_hpo
):
    with pytest.raises(jd.ExperimentFailed) as failed:
        run_hpo(
            flaky, {"x": 1.0, "folder": str(tmp_path), "failures": 3}, trials=1, metric="v", max_failures=2
        )
    t = failed.value.experiment.trials.iloc[0]
    assert t.state == "failed" and t.attempts == 3
    assert "flaky read, attempt 2" in t.error and "attempt 1" not in t.error


def test_without_max_failures_a_raising_trial_fails_at_once(client, tmp_path, run_hpo):
    exp = run_hpo(
        flaky, {"x": jd.space.uniform(0, 1), "folder": str(tmp_path), "failures": 1}, trials=2, metric="v"
    )
    assert sorted(exp.trials.state) == ["completed", "failed"]
    assert list(exp.trials.attempts) == [1, 1]


def pruned_every_time(x=0.0, folder=""):
    ticket(folder)
    raise jd.TrialPruned


def returns_a_string(x=0.0, folder=""):
    ticket(folder)
    return "not a number"


@pytest.mark.parametrize("fn", [pruned_every_time, returns_a_string])
def test_pruned_trials_and_bad_return_values_never_run_again(client, tmp_path, run_hpo, fn):
    folder = tmp_path / "attempts"
    folder.mkdir()
    try:
        run_hpo(fn, {"x": 1.0, "folder": str(folder)}, trials=1, metric="v", max_failures=3)
    except jd.ExperimentFailed:
        pass
    assert os.listdir(folder) == ["0"]


def test_an_ablation_trial_is_retried_too(client, tmp_path, run_ablation):
    def trial(use_a=True, folder=""):
        attempt = ticket(os.path.join(folder, "a" if use_a else "b"))
        if attempt == 0:
            raise OSError("transient")
        return {"v": 1.0 if use_a else 0.5}

    os.mkdir(tmp_path / "a")
    os.mkdir(tmp_path / "b")
    exp = run_ablation(trial, flags=["use_a"], metric="v", params={"folder": str(tmp_path)}, max_failures=1)
    assert list(exp.trials.state) == ["completed", "completed"]
    assert list(exp.trials.attempts) == [2, 2]


def test_max_failures_is_checked_before_any_work(client, run_hpo):
    with pytest.raises(jd.ArgumentError, match=r"max_failures=-1: give a whole number >= 0"):
        run_hpo(flaky, {"x": 1.0}, trials=1, metric="v", max_failures=-1)


def crashes_after_a_checkpoint(x=0.0, folder=""):
    attempt = ticket(folder)
    restored = jd.restore()
    start = 0 if restored is None else restored.step + 1
    for step in range(start, 4):
        jd.report(step=step, v=x + step)
        jd.checkpoint(step, {"done": step})
        if attempt == 0 and step == 1:
            raise RuntimeError("the data loader hiccupped")
    return x + 3


def test_a_retried_trial_restores_its_checkpoint_and_goes_on_from_it(client, tmp_path, run_hpo):
    folder = tmp_path / "attempts"
    folder.mkdir()
    exp = run_hpo(
        crashes_after_a_checkpoint,
        {"x": 1.0, "folder": str(folder)},
        trials=1,
        metric="v",
        max_failures=1,
        checkpoint_dir=str(tmp_path / "checkpoints"),
    )
    record = exp.record.trial_records()[0]
    assert record.state == "completed" and record.attempts == 2 and record.resumed_from == 1
    assert sorted(exp.history.query("attempt == 1").step) == [2, 3]


def test_a_resumed_run_keeps_its_stored_max_failures(client, tmp_path, run_hpo):
    folder = tmp_path / "attempts"
    folder.mkdir()
    space_ = {"x": jd.space.uniform(0, 1), "folder": str(folder), "failures": 0}
    run_hpo(flaky, space_, trials=1, metric="v", name="kept", max_failures=2)
    for name in os.listdir(folder):
        os.remove(folder / name)
    # The second trial raises on its first attempt: resumed without max_failures=, it still runs again.
    resumed = run_hpo(flaky, {**space_, "failures": 1}, trials=2, metric="v", name="kept", resume=True)
    assert list(resumed.trials.state) == ["completed", "completed"]
    assert list(resumed.trials.attempts) == [1, 2]
    assert resumed.record.definition.details["max_failures"] == 2
