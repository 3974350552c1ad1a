"""Experiments written as TensorBoard event files, read back with TensorBoard's own EventAccumulator: scalars per
trial at their steps, the output, and the hparams plugin's summaries; live, after the fact, from dask config."""

from __future__ import annotations

import os
import sys

import dask.config
import pytest
from small_experiment import KINDS
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams.api_pb2 import Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

import jupyter_dist as jd
from jupyter_dist.integrations import TensorBoard


def read(run: str) -> EventAccumulator:
    return EventAccumulator(run, size_guidance={"scalars": 0, "tensors": 0}).Reload()


def hparams_of(acc: EventAccumulator) -> dict[str, HParamsPluginData]:
    return {tag: HParamsPluginData.FromString(c) for tag, c in acc.PluginTagToContent("hparams").items()}


def check_written(exp, folder: str) -> None:
    assert folder == os.path.join(os.path.dirname(folder), exp.name)
    assert sorted(os.listdir(folder)) == sorted(f"trial-{t}" for t in exp.trials.trial_id)
    status = {"ok": "STATUS_SUCCESS", "best": "STATUS_SUCCESS", "fails": "STATUS_FAILURE"}
    for row in exp.trials.itertuples():
        acc = read(os.path.join(folder, f"trial-{row.trial_id}"))
        history = exp.history[exp.history.trial_id == row.trial_id]
        for metric in ("acc", "loss"):
            stored = history[history.metric == metric]
            assert [e.step for e in acc.Scalars(metric)] == list(stored.step)
            assert [e.value for e in acc.Scalars(metric)] == pytest.approx(list(stored.value))
        valued = row.value == row.value  # not NaN: a failed trial has none
        if valued:
            (value,) = acc.Scalars("jupyter_dist/value")
            assert value.value == pytest.approx(row.value)
        else:
            assert "jupyter_dist/value" not in acc.Tags()["scalars"]
        assert acc.Tags()["tensors"] == ["output/text_summary"]  # torch names a text summary so

        plugin = hparams_of(acc)
        start = plugin["_hparams_/session_start_info"].session_start_info
        assert start.hparams["kind"].string_value == row.params_kind
        assert start.hparams["state"].string_value == row.state
        experiment = plugin["_hparams_/experiment"].experiment
        metrics = [m.name.tag for m in experiment.metric_infos]
        assert metrics == (["jupyter_dist/value"] if valued else []) + ["acc", "loss"]
        end = plugin["_hparams_/session_end_info"].session_end_info
        assert Status.Name(end.status) == status.get(row.params_kind, "STATUS_UNKNOWN")
    # Every report the store has of trial 0 (a pruned one reports until the stop reaches it: 2 or more).
    history = exp.history
    recorded = history[(history.trial_id == 0) & (history.metric == "acc")]
    assert len(read(os.path.join(folder, "trial-0")).Scalars("acc")) == len(recorded) >= 2
    assert len(KINDS) == len(exp.trials)


def test_a_run_is_written_live_a_run_folder_per_trial(run_small, tmp_path):
    exp = run_small(callbacks=[TensorBoard(log_dir=tmp_path)], name="tb-live")
    assert TensorBoard.wait(exp, timeout=120)  # the run's end does not wait for the export's process
    check_written(exp, str(tmp_path / "tb-live"))


def test_a_loaded_experiment_is_written_after_the_fact(run_small, tmp_path):
    exp = run_small(name="tb-later")
    folder = jd.load("tb-later").to_tensorboard(log_dir=tmp_path)
    check_written(exp, folder)


def test_dask_config_writes_every_run(run_small, tmp_path):
    with dask.config.set({"jupyter_dist.tracking.tensorboard": {"log-dir": str(tmp_path)}}):
        exp = run_small(name="tb-configured")
    assert TensorBoard.wait(exp, timeout=120)
    assert exp.record.definition.details["control"]["callbacks"] == ["TensorBoard"]
    check_written(exp, str(tmp_path / "tb-configured"))


def test_without_the_extra_the_error_names_it(monkeypatch, run_small, tmp_path):
    exp = run_small()
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if tensorboard were not installed
    with pytest.raises(ImportError, match=r"pip install 'jupyter_dist\[tensorboard\]'"):
        TensorBoard(log_dir=tmp_path)
    with pytest.raises(ImportError, match=r"pip install 'jupyter_dist\[tensorboard\]'"):
        exp.to_tensorboard(log_dir=tmp_path)
