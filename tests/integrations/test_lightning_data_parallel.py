"""A Lightning Trainer inside ``data_parallel()``: two ranks on the shared LocalCluster's worker processes, joined
over gloo by jupyter_dist, trained by Lightning's DDP strategy and reporting through the callback."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("lightning")

import lightning as L  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import jupyter_dist as jd  # noqa: E402
from jupyter_dist.integrations.lightning import DataParallelEnvironment, ReportCallback  # noqa: E402


class Regression(L.LightningModule):
    def __init__(self, lr: float, pause: float) -> None:
        super().__init__()
        self.lr, self.pause = lr, pause
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        time.sleep(self.pause)
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class StopReachesRank0First(L.Callback):
    """The stop flag set in rank 0's process alone at epoch 1, as when the kernel's stop reaches rank 0's worker
    just before a validation and rank 1's just after it (a race of milliseconds, forced here)."""

    def on_validation_end(self, trainer, pl_module):
        from jupyter_dist.trials import current_trial
        from jupyter_dist.trials._trial_context import mark_stopped

        ctx = current_trial()
        if trainer.current_epoch == 1 and not trainer.sanity_checking and ctx.rank == 0:
            mark_stopped(ctx.exp_id, [ctx.trial_id])


def train(lr=0.1, epochs=3, pause=0.0, num_nodes=None, stop_rank_0=False):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=gen)
    data = TensorDataset(x, x @ torch.randn(8, 1, generator=gen))
    torch.manual_seed(0)
    trainer = L.Trainer(
        strategy="ddp",
        accelerator="cpu",
        devices=1,
        num_nodes=jd.world_size() if num_nodes is None else num_nodes,
        plugins=[DataParallelEnvironment()],
        callbacks=[StopReachesRank0First()] * stop_rank_0 + [ReportCallback("val_loss")],
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    # Lightning shards the loaders itself (a DistributedSampler per rank): 2 batches of 64 per rank and epoch.
    trainer.fit(Regression(lr, pause), DataLoader(data, batch_size=64), DataLoader(data, batch_size=128))
    return {"rank": trainer.global_rank, "world": trainer.world_size, "batches": trainer.num_training_batches}


def test_each_rank_is_its_own_lightning_rank_and_rank_0_reports(run_ddp):
    exp = run_ddp(train, workers=2, epochs=3)
    assert exp.state == "completed"
    # Lightning's default environment took both processes for rank 0: [(0, 2, 2), (0, 2, 2)], each training on
    # rank 0's half of the data.
    assert sorted((r["rank"], r["world"], r["batches"]) for r in exp.rank_results) == [(0, 2, 2), (1, 2, 2)]
    reports = exp.history[exp.history.metric == "val_loss"]
    assert reports.step.tolist() == [0, 1, 2]  # one report per epoch, from rank 0
    assert reports.value.is_monotonic_decreasing


def test_a_stop_ends_every_rank_at_the_same_validation(run_ddp):
    # 0.05 s per step, 2 steps an epoch: about 10 epochs a second, stopped after 3 s of 100 epochs.
    exp = run_ddp(train, workers=2, epochs=100, pause=0.05, timeout=3)
    assert exp.state == "completed" and exp.trials.state[0] in ("stopped", "pruned")
    assert exp.trials.error[0] is None  # both ranks raised TrialPruned; neither failed
    assert 0 < exp.trials.steps[0] < 100


def test_a_stop_seen_by_one_rank_stops_the_others_at_the_same_validation(run_ddp):
    exp = run_ddp(train, workers=2, epochs=100, pause=0.05, stop_rank_0=True)
    # Rank 1 stopped too, at the same epoch, rather than going on into a collective rank 0 had left.
    assert exp.trials.error[0] is None, exp.trials.error[0]
    assert exp.trials.state[0] in ("stopped", "pruned")
    assert exp.history[exp.history.metric == "val_loss"].step.tolist() == [0, 1]


def test_a_trainer_sized_for_other_processes_is_refused(run_ddp):
    with pytest.raises(jd.ExperimentFailed) as failed:
        run_ddp(train, workers=2, num_nodes=1)
    assert (
        "Trainer(num_nodes, devices) make 1 processes, but this data_parallel() job has 2 ranks"
        in failed.value.experiment.trials.error[0]
    )
