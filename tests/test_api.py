"""hpo() end to end on a real LocalCluster (2 worker processes)."""

import itertools
import os
import signal
import sys
import time

import numpy as np
import pytest
import torch

import jupyter_dist as jd
from jupyter_dist import space

SPACE = {"lr": space.loguniform(1e-3, 1.0), "width": space.choice([8, 16, 32])}


def quadratic(lr=0.1, width=8):
    for step in range(3):
        jd.report(step=step, loss=(lr - 0.1) ** 2 + 1 / (step + 1), score=-((lr - 0.1) ** 2) + width / 100)
    return None


def test_hpo_returns_an_experiment_with_results(run_hpo):
    exp = run_hpo(
        quadratic,
        SPACE,
        trials=8,
        metric="score",
        mode="max",
        seed=3,
        pruner=None,
    )
    assert exp.state == "completed"
    trials = exp.trials
    assert len(trials) == 8
    assert set(trials.columns) >= {
        "trial_id",
        "state",
        "value",
        "params_lr",
        "params_width",
        "duration",
        "steps",
        "error",
    }
    assert (trials.state == "completed").all()
    assert (trials.steps == 3).all()
    # None returned: the objective is the last reported value of the metric
    history = exp.history
    last = history[(history.metric == "score") & (history.step == 2)].set_index("trial_id").value
    assert np.allclose(trials.set_index("trial_id").value.sort_index(), last.sort_index())
    assert exp.best.value == trials.value.max()
    assert exp.best.params == {
        "lr": trials.loc[trials.value.idxmax(), "params_lr"],
        "width": trials.loc[trials.value.idxmax(), "params_width"],
    }
    assert list(history.columns) == ["trial_id", "attempt", "step", "metric", "value", "time"]
    assert len(history) == 8 * 3 * 2
    fig = exp.plot()
    assert {t.type for t in fig.data} >= {"scatter", "parcoords"}
    parcoords = next(t for t in fig.data if t.type == "parcoords")
    assert [d.label for d in parcoords.dimensions] == [
        "log10(lr)",
        "width",
        "score",
    ]  # log-searched on log axes
    width = parcoords.dimensions[1]  # a choice of numbers: its options as ticks, in the choice's order
    assert list(width.ticktext) == ["8", "16", "32"] and list(width.tickvals) == [0, 1, 2]
    assert "<br>" in fig.layout.title.text or len(fig.layout.title.text) <= 90  # wrapped, not cut


def returns_number(x=0.0):
    return np.float64(x * 2)


def returns_dict(x=0.0):
    return {"obj": torch.tensor(x + 1), "model": object()}


def test_return_kinds_set_the_objective(run_hpo):
    exp = run_hpo(
        returns_number,
        {"x": space.uniform(0, 1)},
        trials=3,
        metric="obj",
        mode="min",
    )
    t = exp.trials
    assert np.allclose(t.value, t.params_x * 2)
    assert exp.best.value == t.value.min()
    exp = run_hpo(
        returns_dict,
        {"x": space.uniform(0, 1)},
        trials=3,
        metric="obj",
    )
    assert np.allclose(exp.trials.value, exp.trials.params_x + 1)


def returns_metrics(x=0.0):
    jd.report(obj=x + 5, acc=0.0)
    return {"obj": x, "acc": 1 - x, "epochs": 3, "model": object()}


def test_a_returned_dicts_other_metrics_are_kept_with_the_trial(run_hpo, tmp_path):
    exp = run_hpo(
        returns_metrics,
        {"x": space.uniform(0, 1)},
        trials=2,
        metric="obj",
        store=str(tmp_path / "store.db"),
    )
    for kept in (exp, jd.load(exp.id, store=str(tmp_path / "store.db"))):
        for rec in kept.trial_records():
            x = rec.params["x"]
            # what it returned outranks what it reported last; the entry that is not a number is left out
            assert rec.last == {"obj": x, "acc": 1 - x, "epochs": 3.0}
            assert rec.value == x


def sometimes_fails(x=0.0):
    print("starting", x)
    print("careful", file=sys.stderr)
    if x > 0.5:
        raise ValueError(f"x too large: {x}")
    return x


def test_a_failing_trial_is_recorded_with_its_traceback_and_others_go_on(run_hpo):
    exp = run_hpo(
        sometimes_fails,
        {"x": space.choice([0.1, 0.9])},
        trials=2,
        metric="x",
        sampler="grid",
    )
    t = exp.trials.set_index("params_x")
    assert t.loc[0.9, "state"] == "failed"
    assert "ValueError: x too large: 0.9" in t.loc[0.9, "error"]
    assert "Traceback" in t.loc[0.9, "error"]
    assert t.loc[0.1, "state"] == "completed" and t.loc[0.1, "error"] is None
    failed_id = int(t.loc[0.9, "trial_id"])
    logs = exp.logs(failed_id)
    assert "starting 0.9" in logs and "careful" in logs and "x too large" in logs
    assert exp.state == "completed"


def always_fails(x=0.0):
    raise RuntimeError("broken on purpose")


def test_when_every_trial_fails_the_experiment_fails_with_the_first_traceback(run_hpo):
    with pytest.raises(jd.ExperimentFailed, match="RuntimeError: broken on purpose") as info:
        run_hpo(
            always_fails,
            {"x": space.uniform(0, 1)},
            trials=3,
            metric="x",
        )
    exp = info.value.experiment
    assert exp.state == "failed"
    assert (exp.trials.state == "failed").all() and len(exp.trials) == 3


def reports_other_metric(x=0.0):
    jd.report(loss=x)
    time.sleep(0.2)


def test_a_metric_never_reported_fails_at_the_end_of_the_first_trial(run_hpo):
    with pytest.raises(jd.ExperimentFailed, match="neither returned nor reported metric 'acc'.*loss") as info:
        run_hpo(
            reports_other_metric,
            {"x": space.uniform(0, 1)},
            trials=20,
            metric="acc",
            parallel=1,
        )
    assert len(info.value.experiment.trials) <= 2  # it stopped right there, not after 20 trials


def reports_score(x=0.0):
    jd.report(score=x, loss=1 - x)


def test_a_misspelt_metric_gets_the_nearest_one_reported(run_hpo):
    with pytest.raises(jd.ExperimentFailed) as info:
        run_hpo(reports_score, {"x": space.uniform(0, 1)}, trials=2, metric="scroe", parallel=1)
    assert "metric 'scroe'" in str(info.value) and "did you mean 'score'?" in str(info.value)
    assert "did you mean 'score'?" in info.value.experiment.trials.error.iloc[0]


def test_summary_is_a_table_for_every_kind(run_hpo):
    import pandas as pd

    grid = {"x": space.choice([0.2, 0.9, 0.5])}
    exp = run_hpo(reports_score, grid, trials=3, metric="score", sampler="grid")
    summary = exp.summary()
    assert isinstance(summary, pd.DataFrame)
    assert list(summary.params_x) == [0.9, 0.5, 0.2] and summary.trial_id.iloc[0] == exp.best.trial_id
    assert "error" not in summary and summary.equals(jd.load(exp.name).summary())
    assert isinstance(exp.status_line(), str)  # the one-line status it was before 0.5


def test_bad_input_is_refused_before_any_work(client):
    submitted = []
    client.subscribe_topic("never", submitted.append)  # nothing to do with it; just a live client
    with pytest.raises(ValueError, match="needs metric="):
        jd.hpo(quadratic, SPACE, cluster=client)
    with pytest.raises(ValueError, match="mode='up'"):
        jd.hpo(quadratic, SPACE, metric="score", mode="up", cluster=client)
    with pytest.raises(jd.SearchSpaceError, match="depth: quadratic\\(\\) has no argument 'depth'"):
        jd.hpo(quadratic, {"depth": space.integer(1, 3)}, metric="score", cluster=client)
    with pytest.raises(ValueError, match="sampler='bogus' is not known"):
        jd.hpo(quadratic, SPACE, metric="score", sampler="bogus", cluster=client)
    with pytest.raises(jd.SearchSpaceError, match="lr: sampler='grid' searches only"):
        jd.hpo(quadratic, SPACE, metric="score", sampler="grid", cluster=client)
    with pytest.raises(ValueError, match="parallel=0"):
        jd.hpo(quadratic, SPACE, metric="score", parallel=0, cluster=client)
    with pytest.raises(ValueError, match="trials=0: give a positive whole number"):
        jd.hpo(quadratic, SPACE, metric="score", trials=0, cluster=client)
    with pytest.raises(TypeError, match="must be callable"):
        jd.hpo("train", SPACE, metric="score", cluster=client)
    with pytest.raises(jd.ClusterError, match="cluster= takes"):
        jd.hpo(quadratic, SPACE, metric="score", cluster=42)


def test_grid_runs_every_combination_once(run_hpo):
    grid = {"lr": space.choice([0.01, 0.1, 1.0]), "width": space.choice([8, 16])}
    exp = run_hpo(
        quadratic,
        grid,
        trials=None,
        metric="score",
        sampler="grid",
    )
    combos = {(r.params_lr, r.params_width) for r in exp.trials.itertuples()}
    assert len(exp.trials) == 6 and len(combos) == 6


@pytest.mark.parametrize("sampler", ["tpe", "gp", "cmaes", "random"])
def test_each_sampler_runs_and_a_seed_makes_it_reproducible(sampler, run_hpo):
    def run():
        exp = run_hpo(
            quadratic,
            {"lr": space.uniform(0.0, 0.5), "width": 8},
            trials=5,
            metric="score",
            sampler=sampler,
            seed=7,
            parallel=1,
        )
        return list(exp.trials.params_lr)

    first = run()
    assert len(set(first)) == 5
    assert run() == first


def test_an_optuna_sampler_instance_is_used_as_given(run_hpo):
    import optuna

    exp = run_hpo(
        quadratic,
        {"lr": space.uniform(0.0, 0.5)},
        trials=3,
        metric="score",
        sampler=optuna.samplers.TPESampler(multivariate=True, n_startup_trials=1, seed=0),
    )
    assert len(exp.trials) == 3


def takes_reporter(lr=0.1, reporter=None):
    for step in range(2):
        reporter.report(step=step, acc=lr + step)
    assert reporter.should_stop is False
    return None


def test_a_reporter_parameter_is_injected(run_hpo):
    exp = run_hpo(
        takes_reporter,
        {"lr": space.uniform(0, 1)},
        trials=2,
        metric="acc",
    )
    assert np.allclose(exp.trials.value, exp.trials.params_lr + 1)


def first_one_is_slow(x=0.0, marker=""):
    try:
        os.mkdir(marker)  # atomic: exactly one trial, the first to get here, is the slow one
        seconds = 2.0
    except FileExistsError:
        seconds = 0.1
    time.sleep(seconds)
    return seconds


def test_trials_are_asynchronous_not_rounds(tmp_path, run_hpo):
    # While one slow trial runs, the other worker keeps taking new trials; rounds would wait for the slow one.
    exp = run_hpo(
        first_one_is_slow,
        {"x": space.uniform(0, 1), "marker": str(tmp_path / "slow")},
        trials=9,
        metric="seconds",
        parallel=2,
    )
    recs = exp.trial_records()
    slow = next(r for r in recs if r.value == 2.0)
    slow_end = slow.started + slow.duration
    during = [
        r for r in recs if r is not slow and r.started >= slow.started and r.started + r.duration <= slow_end
    ]
    assert len(during) >= 5


def killed_once_mid_trial(x=0.0, marker=""):
    for step in range(5):
        jd.report(step=step, v=x + step)
        time.sleep(0.1)
    try:
        os.mkdir(marker)  # the first attempt only: its worker process is killed, the nanny restarts it
    except FileExistsError:
        return x
    time.sleep(0.3)  # let the reports leave the worker, as in a crash some time into training
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_trial_restarts_neither_the_runs_clock_nor_the_trials(client, tmp_path, run_hpo):
    seen = []  # (wall-clock time, the status line, trial-seconds so far) at every redraw

    def watch(exp):
        class Watch:
            def start(self):
                pass

            def idle(self):
                seen.append((time.time(), exp.status_line(), exp.compute()["trial_seconds"]))

            finish = idle

        return Watch()

    try:
        began = time.time()
        exp = run_hpo(
            killed_once_mid_trial,
            {"x": 1.0, "marker": str(tmp_path / "killed")},
            trials=1,
            metric="v",
            parallel=1,
            progress=watch,
        )
        wall = time.time() - began
        trial = exp.trial_records()[0]
        assert trial.state == "completed" and trial.attempts == 2
        first_report = exp.history.query("attempt == 0").time.min().timestamp()
        # The trial ran from its first attempt's start to its second one's end: its clock was not restarted.
        assert trial.started <= first_report
        assert trial.duration >= 2 * 0.5 + 0.3 and trial.started + trial.duration <= began + wall
        # The status line's elapsed time is the run's, across the restart, and compute used never goes back.
        for at, line, _ in seen:
            shown = float(line.rsplit(" · ", 1)[-1].rstrip("s"))
            assert shown == pytest.approx(at - exp.started, abs=0.15)
        assert exp.elapsed == pytest.approx(exp.ended - exp.started) and exp.elapsed <= wall
        # A running trial counts to the kernel's now; once ended it counts its worker's measured time, which
        # is shorter by the time the outcome took to reach the kernel (tenths of a second beside a CPU hog). A
        # clock restarted by the second attempt would drop the count by the first attempt's seconds (over 0.8 s
        # of reports, then the nanny's restart).
        trial_seconds = [used for _, _, used in seen]
        assert all(later >= earlier - 0.5 for earlier, later in itertools.pairwise(trial_seconds))
        assert trial_seconds[-1] == pytest.approx(trial.duration)
    finally:
        # the nanny restarts the killed worker: the next test (on this cluster) finds both, even when an
        # assertion above failed
        client.wait_for_workers(2, timeout=60)
