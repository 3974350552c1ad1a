"""Checkpoints in data-parallel trials (gloo on CPU, 2 ranks on the real LocalCluster): rank 0 writes, every rank
restores, and a failed run resumed with resume=True goes on from its last checkpoint."""

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import jupyter_dist as jd

EPOCHS = 6


def regression(epochs=EPOCHS, fail_at=None):
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 4, generator=data), torch.randn(64, 1, generator=data)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model = jd.prepare(model)  # DDP or FSDP: data_parallel(strategy=) says which
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)  # made after prepare: FSDP's parameters
    loader = jd.prepare(DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False))
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    for epoch in range(start, epochs):
        for xb, yb in loader:
            optimiser.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimiser.step()
        jd.report(step=epoch, loss=torch.nn.functional.mse_loss(model(x), y).item(), start=start)
        jd.checkpoint(epoch, state)
        if epoch == fail_at:  # every rank, after the checkpoint: the job was preempted
            raise RuntimeError("preempted")
    full = jd.unwrap(model).state_dict()
    return {
        k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone() for k, v in full.items()
    }


@pytest.mark.parametrize(("strategy", "workers"), [("ddp", 2), ("fsdp", 2), ("fsdp", 1)])
def test_a_failed_data_parallel_run_resumed_goes_on_from_its_checkpoint(run_ddp, tmp_path, strategy, workers):
    with pytest.raises(jd.ExperimentFailed, match="RuntimeError: preempted"):
        run_ddp(
            regression, workers=workers, name="long", fail_at=2, strategy=strategy, checkpoint_dir=tmp_path
        )
    resumed = run_ddp(
        regression, workers=workers, name="long", resume=True, strategy=strategy, checkpoint_dir=tmp_path
    )
    rec = resumed.trial_records()[0]
    assert resumed.state == "completed" and rec.resumed_from == 2
    history = resumed.history.pivot_table(index=["attempt", "step"], columns="metric", values="value")
    assert list(history.loc[1].index) == [3, 4, 5]  # the resumed run's epochs, after the checkpoint's
    assert (history.loc[1]["start"] == 3).all()

    straight = run_ddp(
        regression, workers=workers, strategy=strategy, checkpoint_dir=tmp_path
    )  # not interrupted
    for name, weights in straight.result.items():
        assert torch.allclose(resumed.result[name], weights, atol=1e-6), name

    folder = Path(resumed.checkpoint())
    assert folder.name == "step-000000005"
    if strategy == "ddp":
        assert sorted(p.name for p in folder.iterdir()) == ["complete", "state.pt"]  # rank 0's one file
    else:
        assert len(list(folder.glob("*.distcp"))) == workers  # each rank wrote its shards, a lone one too
    # The checkpoint loads into a plain model in the notebook, sharded or not.
    plain = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    jd.restore({"model": plain}, path=str(folder))
    for name, weights in plain.state_dict().items():
        assert torch.allclose(weights, resumed.result[name], atol=1e-6), name
