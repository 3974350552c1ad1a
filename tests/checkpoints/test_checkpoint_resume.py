"""Checkpoints on the real LocalCluster: a trial whose worker is killed mid-run resumes from its last checkpoint."""

import io
import os
import signal
import time
from pathlib import Path

import pytest
import torch

import jupyter_dist as jd
from jupyter_dist.widgets import TextView
from jupyter_dist.widgets._live import LiveView

STEPS = 50


def training(lr=0.05, marker="", die_at=None, every=1, pause=0.0):
    """A deterministic regression: the same weights whether it runs straight through or resumes."""
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 4, generator=data), torch.randn(64, 1, generator=data)
    model = torch.nn.Linear(4, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)  # momentum: the optimizer has state
    state = {"model": model, "optimiser": optimiser, "note": "plain values too"}
    start = 0
    restored = jd.restore(state)
    if restored is not None:
        start = restored.step + 1
        assert restored.state["note"] == "plain values too" and restored.state["model"] is model
    for step in range(start, STEPS):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
        time.sleep(pause)
        jd.report(step=step, loss=loss.item())
        if step % every == 0:
            jd.checkpoint(step, state)
        if step == die_at and marker and not os.path.exists(marker):
            os.mkdir(marker)
            time.sleep(0.3)  # let the reports leave the worker, as in a crash some time into training
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies (as with the OOM killer)
    return {"loss": loss.item(), "weight_sum": float(model.weight.detach().sum())}


def test_a_trial_whose_worker_dies_resumes_from_its_last_checkpoint(client, tmp_path, run_hpo):
    marker = str(tmp_path / "died")
    views = []
    exp = run_hpo(
        training,
        {"marker": marker, "die_at": 40, "every": 3},
        trials=1,
        metric="loss",
        mode="min",
        checkpoint_dir=tmp_path / "ckpt",
        progress=lambda exp: views.append(LiveView(exp)) or views[-1],
    )
    client.wait_for_workers(2, timeout=60)
    rec = exp.trial_records()[0]
    assert rec.state == "completed" and rec.attempts == 2
    assert rec.resumed_from == 39  # the last checkpoint before it died at step 40 (every 3rd step)
    history = exp.history
    second = history[history.attempt == 1]
    assert second.step.min() == 40 and second.step.max() == STEPS - 1  # it went on, not from 0
    assert len(history) == 41 + 10  # one report per step run, both attempts: from scratch it would be 41 + 50
    assert rec.curve_steps == list(range(STEPS))  # the live curve continues from the checkpoint
    assert "resumed from its checkpoint of step 39" in exp.logs(0)
    # The live view: the trial's curve goes on from the checkpoint; its row says where it resumed from.
    assert list(views[0].figure.data[0].x) == list(range(STEPS))
    assert "completed · resumed from step 39" in views[0].table.html

    # The same weights as a run that was never interrupted (model and optimizer state both came back).
    straight = training()
    assert exp.trials.value[0] == pytest.approx(straight["loss"], rel=1e-6)

    # The newest checkpoint, for loading the best model afterwards; older ones pruned to keep_checkpoints=2.
    path = exp.checkpoint()
    assert path.endswith("step-000000048")
    folders = sorted(p.name for p in Path(path).parent.iterdir())
    assert folders == ["step-000000045", "step-000000048"]
    model = torch.nn.Linear(4, 1)
    loaded = jd.restore({"model": model}, path=path)
    assert loaded.step == 48 and loaded.state["model"] is model
    assert isinstance(loaded.state["optimiser"], dict)  # not given an object to load into: its state dict


def test_a_stopped_experiment_resumed_goes_on_from_its_trials_checkpoints(run_hpo, fresh_store):
    def stop_once_checkpointed(exp):  # a view that stops the run (as the Stop button) after a few checkpoints
        class View:
            def start(self): ...

            def finish(self): ...

            def idle(self):
                if any((r.checkpoint_step or 0) >= 10 for r in exp.trial_records()):
                    exp.stop()

        return View()

    space = {"pause": 0.05}
    stopped = run_hpo(
        training,
        space,
        trials=1,
        metric="loss",
        mode="min",
        name="interrupted",
        progress=stop_once_checkpointed,
    )
    first = stopped.trial_records()[0]
    assert stopped.state == "stopped" and first.state == "stopped" and 10 <= first.checkpoint_step < STEPS - 1

    out = io.StringIO()
    resumed = run_hpo(
        training,
        space,
        trials=1,
        metric="loss",
        mode="min",
        name="interrupted",
        resume=True,
        progress=lambda exp: TextView(exp, stream=out),
    )
    assert f"trial 1 (attempt 1) resumed from step {first.checkpoint_step}" in out.getvalue()
    again = resumed.trial_records()[-1]  # the stopped trial, run again under a new id
    assert again.trial_id == 1 and again.state == "completed"
    assert again.resumed_from == first.checkpoint_step
    steps = resumed.history.query("trial_id == 1").step
    assert steps.min() == first.checkpoint_step + 1 and steps.max() == STEPS - 1
    assert again.value == pytest.approx(training()["loss"], rel=1e-6)
    assert resumed.checkpoint(1).startswith(
        str(Path(fresh_store).parent / "checkpoints" / stopped.id / "trial-0")
    )


def ablated(features=("a", "b"), marker="", every=1):
    return training(
        lr=0.05 * len(features), marker=marker, die_at=20 if "b" in features else None, every=every
    )


def test_ablation_trials_checkpoint_and_resume_each_in_its_own_folder(client, run_ablation, tmp_path):
    marker = str(tmp_path / "died")  # the first trial whose features include "b" dies once, at step 20
    exp = run_ablation(ablated, features=["a", "b"], metric="loss", mode="min", params={"marker": marker})
    client.wait_for_workers(2, timeout=60)
    records = exp.trial_records()
    assert [r.state for r in records] == ["completed"] * 3
    assert sorted(r.resumed_from for r in records if r.attempts == 2) == [20]  # one trial died, and resumed
    folders = {Path(exp.checkpoint(r.trial_id)).parent.name for r in records}
    assert folders == {"trial-0", "trial-1", "trial-2"}


def test_outside_an_experiment_checkpoints_do_nothing():
    assert jd.restore({"model": torch.nn.Linear(1, 1)}) is None
    assert jd.checkpoint(0, {"model": torch.nn.Linear(1, 1)}) is None
    assert training(every=10)["loss"] > 0  # the training function runs as it is


def test_checkpoints_go_to_an_fsspec_url(run_hpo, tmp_path):
    exp = run_hpo(training, {"every": 20}, trials=1, metric="loss", checkpoint_dir=f"file://{tmp_path}")
    path = exp.checkpoint()
    assert path == f"file://{tmp_path}/{exp.id}/trial-0/step-000000040"
    model = torch.nn.Linear(4, 1)
    assert jd.restore({"model": model}, path=path).step == 40


def test_bad_checkpoint_arguments_are_refused_by_name(run_hpo, tmp_path):
    with pytest.raises(jd.ArgumentError, match="not a complete checkpoint"):
        jd.restore(path=str(tmp_path))
    with pytest.raises(jd.ArgumentError, match="step must be an int >= 0, got 'a'"):
        jd.checkpoint("a", {"x": 1})
    with pytest.raises(jd.ArgumentError, match="state must be a non-empty dict"):
        jd.checkpoint(0, [])
    with pytest.raises(jd.ArgumentError, match="keep_checkpoints=0"):
        run_hpo(training, {"lr": 0.1}, trials=1, metric="loss", keep_checkpoints=0)
    with pytest.raises(jd.ArgumentError, match="checkpoint_dir=3"):
        run_hpo(training, {"lr": 0.1}, trials=1, metric="loss", checkpoint_dir=3)


MAGIC_BODY = """
import jupyter_dist as jd

def counting(epochs=3):
    state = {"epochs_done": 0}
    restored = jd.restore()
    start = 0 if restored is None else restored.step + 1
    for epoch in range(start, epochs):
        jd.report(step=epoch, loss=1.0 / (epoch + 1))
        jd.checkpoint(epoch, {"epochs_done": epoch + 1})
"""


def test_the_magic_takes_the_checkpoint_folder_and_resumes_a_data_parallel_run(client, tmp_path):
    from IPython.testing import globalipapp

    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "jupyter_dist")
    line = f"ddp --workers 2 --name counted --checkpoint-dir {tmp_path} --keep-checkpoints 1 --out counted"
    ip.run_cell_magic("distribute", line, MAGIC_BODY)
    first = ip.user_ns["counted"]
    kept = list((tmp_path / first.id / "trial-0").iterdir())
    assert [p.name for p in kept] == ["step-000000002"]  # --keep-checkpoints 1
    ip.run_cell_magic("distribute", line + " --resume", MAGIC_BODY.replace("epochs=3", "epochs=5"))
    again = ip.user_ns["counted"]
    assert again.id == first.id and again.trial_records()[0].resumed_from == 2
    assert sorted(again.history.query("attempt == 1").step) == [3, 4]
