"""Experiments sent to a real MLflow tracking server, read back with MLflow's own client: live from a run's
callbacks, from dask config, after the fact from a load()ed experiment, and with the server killed mid-run."""

from __future__ import annotations

import socket
import sys
import time
import warnings

import dask.config
import pytest
from mlflow import MlflowClient
from small_experiment import KINDS, STEPS

import jupyter_dist as jd
from jupyter_dist.integrations import MLflow

# seconds the tests give an export to finish (it runs at the lowest CPU priority, on a busy machine)
WAIT = 120


def runs_of(uri: str, experiment: str):
    """The MLflow experiment's parent run and its trials' runs by kind."""
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no MLflow experiment {experiment!r}"
    runs = client.search_runs([found.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = {r.data.params["kind"]: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    return client, parent, children


def check_sent(exp, uri: str, experiment: str, tmp_path) -> None:
    """Everything the store has of the small experiment, as MLflow has it."""
    client, parent, children = runs_of(uri, experiment)
    assert parent.info.run_name == exp.name
    assert parent.data.tags["jupyter_dist.experiment_id"] == exp.id
    assert parent.info.status == "FINISHED" and parent.data.tags["jupyter_dist.state"] == "completed"
    assert sorted(children) == sorted(KINDS)
    assert {r.data.tags["mlflow.parentRunId"] for r in children.values()} == {parent.info.run_id}

    trials = exp.trials.set_index("params_kind")
    assert trials.loc["pruned"].state == "pruned" and trials.loc["fails"].state == "failed"
    status = {"ok": "FINISHED", "best": "FINISHED", "fails": "FAILED", "pruned": "KILLED"}
    for kind, run in children.items():
        row = trials.loc[kind]
        assert run.info.status == status[kind]
        assert run.data.tags["jupyter_dist.state"] == row.state
        assert run.data.tags["jupyter_dist.trial_id"] == str(row.trial_id)
        assert run.info.run_name == f"trial-{row.trial_id}"
        # when the trial was sent to run and when it ended, not when they were written
        record = exp.record.trial(row.trial_id)
        assert run.info.start_time / 1000 <= record.started + 0.001
        assert abs(run.info.end_time / 1000 - (record.started + row.duration)) < 0.002
        assert float(run.data.tags["jupyter_dist.duration"]) == pytest.approx(row.duration, abs=0.001)
        # every report at its step, as the store has them
        history = exp.history[exp.history.trial_id == row.trial_id]
        for metric in ("acc", "loss"):
            sent = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, metric)]
            stored = history[history.metric == metric]
            assert sorted(sent) == sorted(zip(stored.step, stored.value, strict=True))
        output = client.download_artifacts(run.info.run_id, "output.txt", str(tmp_path))
        with open(output) as f:
            text = f.read()
        assert text == exp.logs(row.trial_id) and f"training {kind}" in text
    assert len(client.get_metric_history(children["ok"].info.run_id, "acc")) == STEPS
    assert len(client.get_metric_history(children["fails"].info.run_id, "acc")) == 2

    best = exp.best
    assert parent.data.tags["jupyter_dist.best_trial_id"] == str(best.trial_id)
    assert float(parent.data.tags["jupyter_dist.best_value"]) == best.value
    assert [k for k, r in children.items() if r.data.tags.get("jupyter_dist.best") == "true"] == ["best"]


def test_a_run_is_sent_live_a_nested_run_per_trial(mlflow_server, run_small, tmp_path):
    exp = run_small(callbacks=[MLflow(tracking_uri=mlflow_server.uri, experiment="live")], name="live-run")
    assert exp.state == "completed"
    # the run's end does not wait for the export: its process goes on, and wait() waits for it
    assert MLflow.wait(exp, timeout=WAIT)
    check_sent(exp, mlflow_server.uri, "live", tmp_path)
    failed = exp.trials.set_index("params_kind").loc["fails"].trial_id
    assert "RuntimeError: diverged" in exp.logs(failed)


def test_a_loaded_experiment_is_sent_after_the_fact(mlflow_server, run_small, tmp_path):
    exp = run_small(name="sent-later")
    loaded = jd.load("sent-later")
    parent = loaded.to_mlflow(tracking_uri=mlflow_server.uri, experiment="later")
    check_sent(exp, mlflow_server.uri, "later", tmp_path)
    assert runs_of(mlflow_server.uri, "later")[1].info.run_id == parent


def test_dask_config_sends_every_run_and_an_explicit_tracker_is_not_doubled(mlflow_server, run_ablation):
    def variant(features=("a", "b")):
        for step in range(3):
            jd.report(step=step, acc=0.1 * len(features) * (step + 1))

    setting = {
        "jupyter_dist.tracking.mlflow": {"tracking-uri": mlflow_server.uri, "experiment": "configured"}
    }
    with dask.config.set(setting):
        exp = run_ablation(variant, features=["a", "b"], metric="acc")
        explicit = MLflow(tracking_uri=mlflow_server.uri, experiment="explicit")
        again = run_ablation(variant, features=["a", "b"], metric="acc", callbacks=[explicit])
    assert MLflow.wait(timeout=WAIT)  # every MLflow export of the kernel, the configured one's too
    assert exp.record.definition.details["control"]["callbacks"] == ["MLflow"]
    assert again.record.definition.details["control"]["callbacks"] == ["MLflow"]

    client = MlflowClient(tracking_uri=mlflow_server.uri)
    for name, ran in (("configured", exp), ("explicit", again)):
        runs = client.search_runs([client.get_experiment_by_name(name).experiment_id])
        # one parent, a nested run per variant (the left-out component a tag): the explicit tracker ran
        # instead of the configured one, never beside it
        (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert len(runs) == 4 and parent.data.tags["jupyter_dist.experiment_id"] == ran.id
        assert parent.data.tags["jupyter_dist.kind"] == "ablation"
        assert sorted(r.data.tags["ablated"] for r in children) == ["a", "b", "baseline"]
        assert {r.info.status for r in children} == {"FINISHED"}


def slowly(x=0.0, steps=5):
    for step in range(steps):
        time.sleep(0.1)
        jd.report(step=step, v=x * step)


class KillsTheServer(jd.Callback):
    """Kills the tracking server as the first trial ends."""

    def __init__(self, server):
        self.server = server

    def on_trial_end(self, exp, trial):
        self.server.kill()


def test_a_server_killed_mid_run_is_reported_once_and_the_run_completes(
    own_mlflow_server, run_hpo, monkeypatch
):
    # MLflow's own retries (minutes, by default) are a setting of the client: one try here, so the error is seen.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    server = own_mlflow_server
    callbacks = [MLflow(tracking_uri=server.uri, experiment="killed", timeout=5), KillsTheServer(server)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        exp = run_hpo(
            slowly,
            {"x": jd.space.uniform(0, 1)},
            trials=6,
            parallel=2,
            metric="v",
            pruner=None,
            callbacks=callbacks,
        )
        took = time.monotonic() - started
        assert not MLflow.wait(exp, timeout=WAIT)  # the failure, if no hook has said it yet
    assert exp.state == "completed"
    ours = [w for w in caught if "MLflow tracking server" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    message = str(ours[0].message)
    assert server.uri in message and "failed" in message and exp.name in message
    assert took < 30
    stored = jd.load(exp.id)
    assert sorted(stored.trials.state) == ["completed"] * 6
    assert len(stored.history) == 6 * 5


def test_a_server_that_does_not_answer_neither_slows_the_run_nor_blocks_the_wait(run_hpo):
    with socket.socket() as s:  # a port nobody listens on: MLflow's client retries it for minutes
        s.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{s.getsockname()[1]}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        exp = run_hpo(
            slowly, {"x": jd.space.uniform(0, 1)}, trials=2, metric="v", callbacks=[MLflow(uri, timeout=1)]
        )
        took = time.monotonic() - started
        waited = time.monotonic()
        assert not MLflow.wait(exp, timeout=1)
        waited = time.monotonic() - waited
    # Waiting on MLflow's retries (7, backing off 2 s to 120 s: minutes) would take far longer than 60 s; the run of
    # two 0.5 s trials took under 5 s on a quiet machine, 21 s beside a CPU hog with the suite on two workers.
    assert exp.state == "completed" and took < 60 and waited < 5
    (warning,) = [w for w in caught if "MLflow tracking server" in str(w.message)]
    assert "did not take the last writes within 1 s" in str(warning.message)


def test_without_the_extra_the_error_names_it(monkeypatch, run_small):
    exp = run_small()
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if mlflow were not installed
    with pytest.raises(ImportError, match=r"pip install 'jupyter_dist\[mlflow\]'"):
        MLflow(tracking_uri="http://127.0.0.1:1")
    with pytest.raises(ImportError, match=r"pip install 'jupyter_dist\[mlflow\]'"):
        exp.to_mlflow(tracking_uri="http://127.0.0.1:1")
    with dask.config.set({"jupyter_dist.tracking.mlflow": {"tracking-uri": "http://127.0.0.1:1"}}):
        with pytest.raises(ImportError, match=r"pip install 'jupyter_dist\[mlflow\]'"):
            run_small()
