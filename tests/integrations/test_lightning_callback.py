"""The Lightning report callback in real HPO runs: a real Trainer fitting a tiny model on the shared LocalCluster,
reporting through the callback and pruned by ASHA."""

from __future__ import annotations

import pytest

pytest.importorskip("lightning")

import lightning as L  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import jupyter_dist as jd  # noqa: E402
from jupyter_dist import space  # noqa: E402
from jupyter_dist.integrations.lightning import ReportCallback  # noqa: E402

EPOCHS = 9
BATCHES = 4  # per epoch
# Plain SGD on a well-conditioned least-squares problem: below ~0.4 a larger learning rate has a lower loss at
# every epoch, so the largest is the best throughout and ASHA may prune any other, never it.
LEARNING_RATES = [0.0, 0.003, 0.01, 0.03, 0.1, 0.2]


class Regression(L.LightningModule):
    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def fit(lr=0.1, epochs=EPOCHS, callback=None):
    """Fit the same data from the same initial weights; only the learning rate differs between trials."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64 * BATCHES, 8, generator=gen)
    y = x @ torch.randn(8, 1, generator=gen)
    torch.manual_seed(0)
    trainer = L.Trainer(
        max_epochs=epochs,
        callbacks=[callback or ReportCallback("val_loss")],
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    data = TensorDataset(x, y)
    trainer.fit(Regression(lr), DataLoader(data, batch_size=64), DataLoader(data, batch_size=256))
    return trainer


def train(lr=0.1):
    fit(lr)
    # Reached only when fit() returned: a pruned trial's fit() raises instead.
    jd.report(step=10**6, finished=1.0)
    # Returns None: the objective is the last val_loss the callback reported.


def test_asha_prunes_lightning_trials_through_the_callback(client):
    exp = jd.hpo(
        train,
        {"lr": space.choice(LEARNING_RATES)},
        trials=None,
        metric="val_loss",
        mode="min",
        sampler="grid",
        pruner="asha",
        max_steps=EPOCHS,
        seed=0,
        parallel=1,
        cluster=client,
        progress=False,
    )
    t, history = exp.trials, exp.history
    assert len(t) == len(LEARNING_RATES)
    assert set(t.state) <= {"completed", "pruned"}, t[["state", "error"]]  # pruned, never failed
    assert t.error.isna().all()
    assert exp.best.params == {"lr": max(LEARNING_RATES)}
    pruned, completed = t[t.state == "pruned"], t[t.state == "completed"]
    assert len(pruned) >= 2
    assert (pruned.params_lr < max(LEARNING_RATES)).all()
    for row in pruned.itertuples():
        reports = history[history.trial_id == row.trial_id]
        assert "finished" not in set(reports.metric)  # fit() raised: the function went no further
        assert len(reports) < EPOCHS  # stopped at the epoch the pruner decided on
    for row in completed.itertuples():
        reports = history[(history.trial_id == row.trial_id) & (history.metric == "val_loss")]
        assert reports.step.tolist() == list(range(EPOCHS))  # one report per epoch, the sanity check left out
        assert row.value == pytest.approx(reports.value.iloc[-1])  # the objective is the last reported one
    assert set(history.metric) == {"val_loss", "finished"}  # metrics="val_loss" picked it alone


def fit_reporting_per_epoch(lr=0.1):
    fit(
        lr,
        epochs=3,
        callback=ReportCallback({"loss": "train_loss", "val": "val_loss"}, "train_epoch_end", "global_step"),
    )


def test_train_epoch_end_reports_renamed_metrics_at_the_global_step(client):
    exp = jd.hpo(
        fit_reporting_per_epoch,
        {"lr": space.choice([0.1])},
        trials=1,
        metric="loss",
        mode="min",
        pruner=None,
        cluster=client,
        progress=False,
    )
    history = exp.history
    assert set(history.metric) == {"loss", "val"}
    # At the end of a training epoch, that epoch's training loss: one report per epoch, at the optimizer steps
    # taken so far.
    steps = history[history.metric == "loss"].step.tolist()
    assert steps == [BATCHES, 2 * BATCHES, 3 * BATCHES]
    assert exp.trials.state.tolist() == ["completed"]


def test_outside_an_experiment_the_callback_changes_nothing():
    trainer = fit(0.1, epochs=2)  # called directly, as in the notebook: report() does nothing
    assert trainer.state.status == "finished" and trainer.current_epoch == 2


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(
        ValueError, match=r"\(on='test_end'\) is not a hook it reports on: use one of 'validation_end'"
    ):
        ReportCallback(on="test_end")
    with pytest.raises(ValueError, match=r"\(step='batch'\) is not known: use 'epoch'"):
        ReportCallback(step="batch")
    with pytest.raises(ValueError, match=r"metrics=5\): give a name, a list of names, or a dict"):
        ReportCallback(metrics=5)
    with pytest.raises(ValueError, match=r"metrics=\[\]\) picks no metric"):
        ReportCallback(metrics=[])
