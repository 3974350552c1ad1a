"""The report callback for the older ``pytorch_lightning`` package, whose Trainer accepts only its own Callback
class: one real trial reporting every epoch."""

from __future__ import annotations

import pytest

pytest.importorskip("pytorch_lightning")

import pytorch_lightning as pl  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import jupyter_dist as jd  # noqa: E402
from jupyter_dist import space  # noqa: E402
from jupyter_dist.integrations.pytorch_lightning import ReportCallback  # noqa: E402


class Regression(pl.LightningModule):
    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def train(lr=0.1):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(128, 8, generator=gen)
    data = TensorDataset(x, x @ torch.randn(8, 1, generator=gen))
    trainer = pl.Trainer(
        max_epochs=3,
        callbacks=[ReportCallback()],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Regression(lr), DataLoader(data, batch_size=64), DataLoader(data, batch_size=128))


def test_a_pytorch_lightning_trainer_reports_every_epoch(client):
    exp = jd.hpo(
        train,
        {"lr": space.choice([0.1])},
        trials=1,
        metric="val_loss",
        mode="min",
        cluster=client,
        progress=False,
    )
    history = exp.history
    assert exp.trials.state.tolist() == ["completed"]
    assert history[history.metric == "val_loss"].step.tolist() == [0, 1, 2]
    assert exp.best.value == pytest.approx(history.value.iloc[-1])
