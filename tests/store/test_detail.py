"""One builder for an experiment's detail: the kernel's snapshot (from its live record) and the REST API's detail
(from the record read back from the store) are the same dict for the same run."""

from __future__ import annotations

import typing

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.store import ExperimentDetail, StoreReader, TrialSummary, experiment_detail
from jupyter_dist.widgets._lab import experiment_snapshot

# What only one side knows: the kernel's record began after its definition was made (the cluster started in
# between), and the store counts from the definition; the store keeps ``about`` (the function's source...).
ONE_SIDED = {"started", "duration", "about"}


def keys_of(shape) -> tuple[set[str], set[str]]:
    """A wire type's required keys and all its keys."""
    hints = typing.get_type_hints(shape, include_extras=True)
    optional = {k for k, t in hints.items() if typing.get_origin(t) is typing.NotRequired}
    return set(hints) - optional, set(hints)


def assert_detail_shape(detail: dict) -> None:
    required, allowed = keys_of(ExperimentDetail)
    assert required <= set(detail) <= allowed, set(detail) ^ required
    for trial in detail["trials"]:
        assert set(trial) == keys_of(TrialSummary)[1]


def train(lr=0.1):
    print(f"lr={lr}")
    for step in range(3):
        jd.report(step=step, acc=lr * (step + 1), loss=float("nan"))
    return {"acc": lr * 3}


def test_the_kernels_snapshot_and_the_stored_detail_of_a_run_are_one_dict(run_hpo, fresh_store):
    exp = run_hpo(train, {"lr": space.uniform(0.01, 0.3)}, trials=4, metric="acc")
    live = experiment_snapshot(exp)
    stored = StoreReader(fresh_store).detail(exp.id)
    assert_detail_shape(live)
    assert_detail_shape(stored)
    assert "about" not in live and "def train" in stored["about"]["source"]
    assert {k: v for k, v in live.items() if k not in ONE_SIDED} == {
        k: v for k, v in stored.items() if k not in ONE_SIDED
    }
    assert live["best"] == {"trial_id": exp.best.trial_id, "value": exp.best.value, "params": exp.best.params}
    assert live["trials"][0]["last"]["loss"] is None  # NaN: JSON has none
    assert live["duration"] == pytest.approx(stored["duration"], abs=5)


def test_a_data_parallel_run_has_no_best_on_either_side(run_ddp, fresh_store):
    """It optimises nothing, though its trial has a value (the curve's last) for the table: the snapshot used to
    name that trial best while the REST API said none."""

    def fit(n=3):
        jd.report(step=0, loss=1.0 / n)
        return {"weights": [jd.rank()] * n}

    run = run_ddp(fit, workers=2, n=3)
    live, stored = experiment_detail(run.record), StoreReader(fresh_store).detail(run.id)
    assert live["best"] is None and stored["best"] is None
    assert live["trials"][0]["value"] == pytest.approx(1 / 3)
    assert live["trials"] == stored["trials"]
    assert stored["trials"][0]["result"] == "{'weights': [0, 0, 0]}"


def test_a_saved_snapshot_of_a_large_run_keeps_its_best_trials(tmp_path, monkeypatch):
    """10,000 trials' summaries made a 6.4 MB notebook; the saved cell keeps the best SNAPSHOT_TRIALS (the view says
    how many of how many, and the Experiments panel lists them all)."""
    import sys
    from pathlib import Path

    from jupyter_dist.experiment import Experiment
    from jupyter_dist.widgets import _lab

    sys.path.insert(0, str(Path(__file__).parents[1] / "lab"))
    from big_experiment import write_experiment

    monkeypatch.setattr(_lab, "SNAPSHOT_TRIALS", 50)
    record = write_experiment(str(tmp_path / "big.sqlite"), trials=120, steps=2)
    snapshot = experiment_snapshot(Experiment(record))
    values = sorted((r.value for r in record.trial_records()), reverse=True)
    kept = [t["value"] for t in snapshot["trials"]]
    assert len(kept) == 50 and kept == values[:50]  # best first, as the table lists them
    assert snapshot["trials_done"] == 120 and snapshot["best"]["value"] == values[0]
    assert snapshot["trial_count"] == 120 and snapshot["counts"] == {"completed": 120}
    assert snapshot["running"] == []
