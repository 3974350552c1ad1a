"""exp.reproduce(trial_id), on the real LocalCluster: a trial runs again as its run ran it (parameters, seed, the
report its run pruned it at), in the kernel or on the cluster, and returns what the function returned; what cannot
be reproduced is refused, saying why, and what changed since the run is warned of."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.experiment import ReproduceWarning

ran_in_this_process: list[int] = []  # the steps a trial reported when it ran here (in the test's process)


def draws(x=0.0, steps=3, pause=0.0):
    import random
    import time

    import numpy as np
    import torch

    drawn = {"py": random.random(), "np": float(np.random.rand()), "torch": float(torch.rand(1))}
    for step in range(steps):
        ran_in_this_process.append(step)
        time.sleep(pause)
        jd.report(step=step, v=x + step)
    if x > 2:
        raise ValueError(f"x={x} is too large")
    jd.report(step=steps, **drawn)
    return {"v": x, **drawn}


SPACE = {"x": space.uniform(0, 1)}


def test_a_trial_runs_again_in_the_kernel_and_on_the_cluster_returning_what_it_returned(run_hpo):
    exp = run_hpo(draws, SPACE, trials=3, metric="v", parallel=2, name="again")
    for rec in exp.trial_records():
        ran = {k: rec.last[k] for k in ("py", "np", "torch")}
        here = exp.reproduce(rec.trial_id)
        assert {k: here[k] for k in ran} == ran and here["v"] == rec.params["x"]
        there = exp.reproduce(rec.trial_id, on="cluster")
        assert there == here
    # the experiment is as it was: nothing recorded, no trial added
    assert len(jd.load("again").trials) == 3 and len(jd.load("again").history) == len(exp.history)


def test_a_stopped_trial_stops_at_the_report_its_run_stopped_it_at(run_hpo):
    # its goal is v >= 10: it is told to stop, and stops at whichever report learnt of it
    slow = {"x": 0.5, "steps": 2000, "pause": 0.01}  # 20 s unless stopped
    exp = run_hpo(draws, slow, trials=1, metric="v", stop={"v": 10}, name="stopped")
    (rec,) = exp.trial_records()
    assert rec.stopped_at is not None and 10 < rec.steps < 2000
    ran_in_this_process.clear()
    assert exp.reproduce(rec.trial_id) is None
    assert len(ran_in_this_process) == rec.steps


def test_a_failed_trial_raises_its_error_again_where_debug_can_reach_it(run_hpo):
    with pytest.raises(jd.ExperimentFailed) as run:
        run_hpo(draws, {"x": 3.0}, trials=1, metric="v", name="fails")
    exp = run.value.experiment
    assert exp.trials.state[0] == "failed"
    with pytest.raises(ValueError, match="x=3.0 is too large") as raised:
        exp.reproduce(0)
    assert raised.traceback[-1].name == "draws"  # raised in the function's own frame, in this process


def test_a_loaded_experiment_runs_the_function_the_notebook_defines_again(run_hpo):
    from IPython.testing import globalipapp

    exp = run_hpo(draws, SPACE, trials=2, metric="v", name="stored")
    loaded = jd.load("stored")
    # The notebook's kernel shell. IPython's test shell, as every other test takes it: a plain
    # InteractiveShell.instance() made first would make those tests' get_ipython() fail on the same xdist worker.
    shell = globalipapp.get_ipython()
    shell.user_ns.pop("draws", None)
    with pytest.raises(jd.JupyterDistError, match=r"ran draws\(\), which is not defined in this notebook"):
        loaded.reproduce(0)
    # the cell that defines it run again, as it was
    cell = "import jupyter_dist as jd\nran_in_this_process = []\n" + inspect.getsource(draws)
    assert shell.run_cell(cell).success
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReproduceWarning)  # nothing changed: no warning
        assert loaded.reproduce(1) == exp.reproduce(1)
    shell.user_ns.pop("draws")


def test_a_loaded_run_finds_the_trial_to_reproduce_without_walking_every_trial(run_hpo, monkeypatch):
    """At 100,000 trials, making every trial's record again to find one took 0.5 s."""
    exp = run_hpo(draws, SPACE, trials=2, metric="v", name="found")
    loaded = jd.load("found")
    walked = []
    every_trial = loaded.record.trial_records
    monkeypatch.setattr(loaded.record, "trial_records", lambda: walked.append(1) or every_trial())
    assert loaded.reproduce(1, fn=draws) == exp.reproduce(1)
    assert not walked and loaded.record._unread is not None  # nor any trial's reports and output read
    with pytest.raises(jd.ArgumentError, match=r"'found' has no trial 7: its trials are 0, 1"):
        loaded.reproduce(7, fn=draws)


def edited(x=0.0):
    return {"v": x * 2}


edited.__name__ = "draws"  # the notebook's cell, edited since the run


def test_a_changed_function_is_warned_of_by_name(run_hpo):
    run_hpo(draws, SPACE, trials=1, metric="v", name="changed")
    with pytest.warns(ReproduceWarning, match=r"changed since its run: the source of draws\(\)"):
        jd.load("changed").reproduce(0, fn=edited)


def test_what_cannot_be_reproduced_is_refused_before_anything_runs(run_hpo, run_ddp):
    exp = run_hpo(draws, SPACE, trials=2, metric="v", name="bad")
    with pytest.raises(jd.ArgumentError, match=r"'bad' has no trial 7: its trials are 0, 1"):
        exp.reproduce(7)
    with pytest.raises(jd.ArgumentError, match="on='gpu'"):
        exp.reproduce(0, on="gpu")
    with pytest.raises(jd.ArgumentError, match="fn=3 is not a function"):
        exp.reproduce(0, fn=3)
    ddp = run_ddp(lambda: 1, workers=1, name="ranks")
    with pytest.raises(jd.ArgumentError, match="data-parallel run of 1 ranks"):
        ddp.reproduce(0)


def modular(seed=0):
    """Says whether its encoder was left out (an ablation study's module variant)."""
    from collections import OrderedDict

    import torch

    model = jd.ablate(
        torch.nn.Sequential(OrderedDict(encoder=torch.nn.Linear(2, 2), head=torch.nn.Linear(2, 1)))
    )
    return {"v": float(not isinstance(model.encoder, torch.nn.Linear))}


def test_an_ablation_variant_runs_again_without_its_module(run_ablation):
    exp = run_ablation(modular, modules=["encoder"], metric="v")
    values = {rec.labels["ablated"]: rec.trial_id for rec in exp.trial_records()}
    assert exp.trials.set_index("ablated").value.to_dict() == {"baseline": 0.0, "encoder": 1.0}
    assert exp.reproduce(values["baseline"]) == {"v": 0.0}
    assert exp.reproduce(values["encoder"]) == {"v": 1.0}
    assert jd.load(exp.name).reproduce(values["encoder"], fn=modular) == {"v": 1.0}


def climb(lr=0.01, steps=12):
    """A PBT member: checkpoints every step, goes on from its restored checkpoint."""
    import torch

    restored = jd.restore({"w": torch.zeros(1)})
    start = restored.step + 1 if restored is not None else 0
    for step in range(start, steps):
        ran_in_this_process.append(step)
        jd.report(step=step, score=lr * (step + 1))
        jd.checkpoint(step, {"w": torch.zeros(1)})
    return {"score": lr * steps}


def test_a_pbt_members_first_segment_runs_again_to_its_last_step_and_a_later_one_is_refused(client, tmp_path):
    exp = jd.pbt(
        climb,
        {"lr": space.uniform(0.001, 0.02)},
        population=2,
        perturbation_interval=4,
        max_steps=12,
        metric="score",
        cluster=client,
        progress=False,
        checkpoint_dir=tmp_path / "checkpoints",
    )
    first = next(r for r in exp.trial_records() if r.labels.get("from_trial") is None)
    ran_in_this_process.clear()
    assert exp.reproduce(first.trial_id) is None  # a segment ends at its checkpoint: it returns nothing
    assert ran_in_this_process == [0, 1, 2, 3]  # steps 0..3: the first segment of perturbation_interval=4
    assert not any(Path(tmp_path / "checkpoints").rglob("*again*"))  # its checkpoints were its own, and gone
    later = next(r for r in exp.trial_records() if r.labels.get("from_trial") is not None)
    with pytest.raises(
        jd.ArgumentError, match=f"trial {later.trial_id} of 'climb' is a segment that went on"
    ):
        exp.reproduce(later.trial_id)
