"""prepare()'s training features, on the session's real LocalCluster (2 worker processes), gloo on CPU, real torch:
mixed precision, gradient accumulation, gather / gather_for_metrics, FSDP, and their refusals."""

import pytest
import torch
from IPython.core.error import UsageError
from torch.utils.data import DataLoader, Dataset, TensorDataset

import jupyter_dist as jd


def regression_data(samples=96, features=5):
    data = torch.Generator().manual_seed(1)
    return torch.randn(samples, features, generator=data), torch.randn(samples, 1, generator=data)


def small_model(features=5):
    torch.manual_seed(0)  # the same initial weights on every rank and in the single-process run
    return torch.nn.Sequential(torch.nn.Linear(features, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


# --- mixed precision ---------------------------------------------------------------------------------------------


def autocast_dtypes(precision=None):
    model = small_model(4)
    inside = []
    model[0].register_forward_hook(lambda module, inputs, output: inside.append(str(output.dtype)))
    model = jd.prepare(model, mixed_precision=precision)
    output = model(torch.randn(3, 4))
    output.sum().backward()
    return {"inside": inside[0], "returned": str(output.dtype), "model": type(model).__name__}


def test_bf16_runs_the_forward_under_autocast_and_returns_float32(run_ddp):
    exp = run_ddp(autocast_dtypes, workers=2, precision="bf16")
    assert (
        exp.rank_results
        == [{"inside": "torch.bfloat16", "returned": "torch.float32", "model": "DistributedDataParallel"}] * 2
    )
    # The run's default (data_parallel(mixed_precision=...)) applies when prepare() is not told; "no" turns it off.
    by_default = run_ddp(autocast_dtypes, workers=2, mixed_precision="bf16")
    assert by_default.result["inside"] == "torch.bfloat16"
    turned_off = run_ddp(autocast_dtypes, workers=2, mixed_precision="bf16", precision="no")
    assert turned_off.result["inside"] == "torch.float32"
    # Without it nothing changes, and alone (one process) the option applies too.
    assert run_ddp(autocast_dtypes, workers=2).result["inside"] == "torch.float32"
    assert autocast_dtypes("bf16") == {
        "inside": "torch.bfloat16",
        "returned": "torch.float32",
        "model": "Sequential",
    }
    assert autocast_dtypes(None)["inside"] == "torch.float32"


def _train_fp16(x, y, steps, lr):
    model = small_model()
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    model, optimiser = jd.prepare(model, optimiser, mixed_precision="fp16")
    bias = jd.unwrap(model)[2].bias
    losses, checked = [], []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        jd.backward(loss)
        scaled, before = bias.grad.clone(), bias.detach().clone()
        scale = optimiser.scaler.get_scale()
        optimiser.step()
        if optimiser.stepped:  # SGD's step on the unscaled gradient: before - lr * scaled / scale
            checked.append(torch.allclose(before - bias.detach(), lr * scaled / scale, rtol=1e-3, atol=1e-7))
        losses.append(loss.item())
    return {
        "losses": losses,
        "scale": scale,
        "largest_scaled_gradient": scaled.abs().max().item(),
        "steps_checked": len(checked),
        "all_unscaled": all(checked),
        "scaler": type(optimiser.scaler).__name__,
    }


def fp16_run(steps=40):
    x, y = regression_data(64)
    device = jd.devices()[0] if jd.devices() else torch.device("cpu")  # a rank's GPU, where it has one
    return _train_fp16(x.to(device), y.to(device), steps, lr=0.1)


@pytest.mark.parametrize("workers", [2, None])
def test_fp16_scales_the_loss_through_backward_and_the_optimizer_unscales(run_ddp, workers):
    outcome = run_ddp(fp16_run, workers=workers).result if workers else fp16_run()  # None: alone
    assert outcome["scaler"] == "GradScaler" and outcome["scale"] >= 2.0**10  # the scaler is in use on CPU
    assert outcome["largest_scaled_gradient"] > 100  # jd.backward scaled the loss: gradients are huge...
    assert outcome["steps_checked"] >= 30 and outcome["all_unscaled"]  # ...and step() undid it
    assert outcome["losses"][-1] < 0.8 * outcome["losses"][0]


# --- gradient accumulation ---------------------------------------------------------------------------------------


def accumulated(per_rank_batch=4, accumulate=2, epochs=2, zero_first=True):
    x, y = regression_data()
    model = small_model()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=per_rank_batch, shuffle=False)
    model, optimiser, loader = jd.prepare(model, optimiser, loader, accumulate=accumulate)
    all_reduces = []
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        def counting_hook(state, bucket):
            all_reduces.append(bucket.index())
            return allreduce_hook(state, bucket)

        model.register_comm_hook(None, counting_hook)
    after_each_backward = []
    for _ in range(epochs):
        for xb, yb in loader:
            if zero_first:
                optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            after_each_backward.append(len(all_reduces))
            optimiser.step()
            if not zero_first:
                optimiser.zero_grad()
    weights = {name: value.detach().clone() for name, value in jd.unwrap(model).state_dict().items()}
    return {"weights": weights, "all_reduces": after_each_backward}


def test_accumulating_two_micro_batches_on_two_ranks_equals_one_process_on_the_whole_batch(run_ddp):
    exp = run_ddp(accumulated, workers=2, per_rank_batch=4, accumulate=2)
    alone = accumulated(per_rank_batch=16, accumulate=1)["weights"]  # 2 ranks x 2 micro-batches x 4
    for name, weights in alone.items():
        assert torch.allclose(exp.result["weights"][name], weights, atol=1e-6), name
        assert torch.equal(exp.rank_results[1]["weights"][name], exp.result["weights"][name]), name
    unaccumulated = run_ddp(accumulated, workers=2, per_rank_batch=4, accumulate=1).result["weights"]
    assert not all(torch.allclose(unaccumulated[n], w, atol=1e-4) for n, w in alone.items())  # it can fail

    # The all-reduce ran on every second backward only: the micro-steps skipped it.
    counts = exp.result["all_reduces"]
    added = [after - before for before, after in zip([0, *counts], counts, strict=False)]
    assert len(added) == 2 * 96 // (2 * 4) and added[0::2] == [0] * (len(added) // 2)
    assert all(n > 0 for n in added[1::2])
    every_backward = run_ddp(accumulated, workers=2, accumulate=1).result["all_reduces"]
    assert all(after > before for before, after in zip([0, *every_backward], every_backward, strict=False))


def test_accumulation_applies_alone_too_in_either_loop_order():
    whole = accumulated(per_rank_batch=16, accumulate=1)["weights"]
    for zero_first in (True, False):
        micro = accumulated(per_rank_batch=4, accumulate=4, zero_first=zero_first)["weights"]
        for name, weights in whole.items():
            assert torch.allclose(micro[name], weights, atol=1e-6), (zero_first, name)


# --- gather -------------------------------------------------------------------------------------------------------


class Numbered(Dataset):
    """Samples that carry their own index, so a gathered evaluation shows which samples it saw."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return index, torch.full((3,), float(index))


def evaluate(samples=37, per_rank_batch=8, shuffle=False):
    loader = jd.prepare(DataLoader(Numbered(samples), batch_size=per_rank_batch, shuffle=shuffle))
    kept, everything, features = [], [], []
    for ids, x in loader:
        batch = jd.gather_for_metrics({"ids": ids, "nested": (x,)})
        kept.append(batch["ids"])
        features.append(batch["nested"][0])
        everything.append(jd.gather(ids))
    uneven = jd.gather(torch.arange(jd.rank() + 1))  # rank 0 has 1 row, rank 1 has 2
    return {
        "kept": torch.cat(kept).tolist(),
        "features_match": bool((torch.cat(features)[:, 0].long() == torch.cat(kept)).all()),
        "all": torch.cat(everything).tolist(),
        "uneven": uneven.tolist(),
        "scalars": jd.gather(torch.tensor(float(jd.rank()))).tolist(),
        "after_the_loop": jd.gather_for_metrics(torch.tensor([jd.rank()])).tolist(),
    }


@pytest.mark.parametrize("shuffle", [False, True])
def test_gather_for_metrics_counts_every_validation_sample_exactly_once(run_ddp, shuffle):
    exp = run_ddp(evaluate, workers=2, samples=37, per_rank_batch=8, shuffle=shuffle)
    for outcome in exp.rank_results:  # every rank gets the whole set
        assert sorted(outcome["kept"]) == list(range(37)) and outcome["features_match"]
        assert len(outcome["all"]) == 38 and sorted(set(outcome["all"])) == list(range(37))
        assert outcome["uneven"] == [0, 0, 1] and outcome["scalars"] == [0.0, 1.0]
        assert outcome["after_the_loop"] == [0, 1]  # past the final batch nothing is dropped
    even = run_ddp(evaluate, workers=2, samples=32).result
    assert even["kept"] == even["all"] and sorted(even["kept"]) == list(range(32))


def test_alone_gather_returns_its_input():
    ids = torch.arange(5)
    assert jd.gather(ids) is ids and jd.gather_for_metrics(ids) is ids
    outcome = evaluate(samples=5, per_rank_batch=2)
    assert outcome["kept"] == outcome["all"] == list(range(5))


# --- FSDP ---------------------------------------------------------------------------------------------------------


def mlp_training(steps=8, accumulate=1):
    x, _ = regression_data(256, features=8)
    y = x.sum(dim=1, keepdim=True) / 3  # learnable in a few steps
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16),
        torch.nn.Tanh(),
        torch.nn.Linear(16, 8),
        torch.nn.Tanh(),
        torch.nn.Linear(8, 1),
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=0.02)  # made before prepare(), as usual
    total = sum(p.numel() for p in model.parameters())
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)
    model, optimiser, loader = jd.prepare(model, optimiser, loader, accumulate=accumulate)
    held = sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())
    optimised = [p for group in optimiser.param_groups for p in group["params"]]
    with torch.no_grad():
        before = torch.nn.functional.mse_loss(model(x), y).item()
    losses = []
    for xb, yb in loader:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        losses.append(loss.item())
        if len(losses) == steps * accumulate:
            break
    with torch.no_grad():
        after = torch.nn.functional.mse_loss(model(x), y).item()
    return {
        "losses": losses,
        "loss_on_the_whole_set": (before, after),
        "total": total,
        "held": held,
        "model": type(model).__name__,
        "optimises_the_model": [id(p) for p in optimised] == [id(p) for p in model.parameters()],
        "parameter": type(optimised[0]).__name__,
    }


@pytest.mark.parametrize("accumulate", [1, 2])
def test_fsdp_shards_the_parameters_and_trains_as_ddp_does(run_ddp, accumulate):
    ddp = run_ddp(mlp_training, workers=2, accumulate=accumulate)
    fsdp = run_ddp(mlp_training, workers=2, strategy="fsdp", accumulate=accumulate)
    assert ddp.result["model"] == "DistributedDataParallel" and fsdp.result["model"] == "FSDPSequential"
    assert fsdp.result["losses"] == pytest.approx(ddp.result["losses"], rel=1e-4)
    before, after = fsdp.result["loss_on_the_whole_set"]
    assert after < 0.8 * before  # the re-pointed optimizer does train the sharded model
    held = [outcome["held"] for outcome in fsdp.rank_results]
    total = fsdp.result["total"]
    assert sum(held) == total and all(abs(h - total / 2) <= 0.05 * total for h in held)
    assert ddp.result["held"] == total
    assert fsdp.result["optimises_the_model"] and fsdp.result["parameter"] == "DTensor"


def test_fsdp_shards_a_single_rank_too_while_ddp_leaves_it_unwrapped(run_ddp):
    # One rank: DDP would only cost time, but FSDP is asked for its sharded checkpoints and code path, the same at
    # every world size (on one GPU this is the FSDP there is to run).
    ddp = run_ddp(mlp_training, workers=1)
    fsdp = run_ddp(mlp_training, workers=1, strategy="fsdp")
    assert ddp.result["model"] == "Sequential" and fsdp.result["model"] == "FSDPSequential"
    assert fsdp.result["parameter"] == "DTensor" and fsdp.result["held"] == fsdp.result["total"]
    assert fsdp.result["losses"] == pytest.approx(ddp.result["losses"], rel=1e-4)


def test_fsdp_refuses_an_optimizer_that_already_stepped():
    from jupyter_dist.ddp._fsdp import repoint_optimizer

    old = torch.nn.Parameter(torch.ones(2))
    optimiser = torch.optim.Adam([old])
    old.sum().backward()
    optimiser.step()
    with pytest.raises(jd.ArgumentError, match="already has state"):
        repoint_optimizer(optimiser, {id(old): torch.nn.Parameter(torch.zeros(1))})


# --- refusals ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mixed_precision": "fp8"}, "mixed_precision='fp8'"),
        ({"strategy": "zero"}, "strategy='zero'"),
        ({"accumulate": 0}, "accumulate=0"),
        ({"accumulate": 2.0}, "accumulate=2.0"),
        ({"accumulate": 2, "without_optimizer": True}, "accumulate=2\\) got 0 optimizers"),
    ],
)
def test_bad_training_options_are_refused(kwargs, message):
    model = torch.nn.Linear(2, 1)
    objects = (
        (model,) if kwargs.pop("without_optimizer", False) else (model, torch.optim.SGD(model.parameters()))
    )
    with pytest.raises(jd.ArgumentError, match=message):
        jd.prepare(*objects, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"strategy": "zero"}, "strategy='zero'"), ({"mixed_precision": "fp8"}, "mixed_precision='fp8'")],
)
def test_data_parallel_refuses_them_before_any_work(kwargs, message):
    with pytest.raises(jd.ArgumentError, match=message):
        jd.data_parallel(autocast_dtypes, cluster="tcp://127.0.0.1:9", progress=False, **kwargs)


MAGIC_BODY = """
import torch
import jupyter_dist as jd

def sharded():
    model = jd.prepare(torch.nn.Sequential(torch.nn.Linear(4, 4)))
    inside = []
    model[0].register_forward_hook(lambda module, inputs, output: inside.append(str(output.dtype)))
    model(torch.ones(2, 4)).sum().backward()
    return type(model).__name__, inside[0]
"""


def test_the_magic_passes_strategy_and_mixed_precision_to_the_run(client):
    from IPython.testing import globalipapp

    ip = globalipapp.get_ipython()  # the module's attribute: whichever test module started the shell first
    ip.run_line_magic("load_ext", "jupyter_dist")
    line = "ddp --workers 2 --strategy fsdp --mixed-precision bf16 --out sharded_run"
    ip.run_cell_magic("distribute", line, MAGIC_BODY)
    exp = ip.user_ns["sharded_run"]
    assert exp.rank_results == [("FSDPSequential", "torch.bfloat16")] * 2
    with pytest.raises(UsageError, match="--strategy: invalid choice: 'zero'"):
        ip.run_cell_magic("distribute", "ddp --strategy zero", MAGIC_BODY)
    with pytest.raises(UsageError, match="--mixed-precision: invalid choice: 'fp8'"):
        ip.run_cell_magic("distribute", "ddp --mixed-precision fp8", MAGIC_BODY)
    with pytest.raises(UsageError, match="--strategy: not an option of %%distribute hpo"):
        ip.run_cell_magic("distribute", "hpo --metric x --strategy fsdp", MAGIC_BODY)


# --- on GPUs --------------------------------------------------------------------------------------------------------


@pytest.fixture
def gpu_client():
    from distributed import Client, LocalCluster

    workers = min(torch.cuda.device_count(), 2)
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, resources={"GPU": 1}, host="127.0.0.1"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client, workers


@pytest.mark.gpu
def test_fp16_on_gpus_scales_and_unscales(gpu_client):
    client, workers = gpu_client
    exp = jd.data_parallel(fp16_run, workers=workers, gpus_per_worker=1, cluster=client, progress=False)
    outcome = exp.result
    assert (
        outcome["largest_scaled_gradient"] > 100
        and outcome["all_unscaled"]
        and outcome["steps_checked"] >= 30
    )
    assert outcome["losses"][-1] < 0.8 * outcome["losses"][0]


@pytest.mark.gpu
def test_fsdp_with_nccl_trains_as_ddp_does(gpu_client):
    client, workers = gpu_client
    if workers < 2:
        pytest.skip("sharding across ranks needs 2 GPUs")
    common = dict(workers=workers, gpus_per_worker=1, cluster=client, progress=False)
    ddp = jd.data_parallel(mlp_training, **common)
    fsdp = jd.data_parallel(mlp_training, strategy="fsdp", **common)
    assert fsdp.result["losses"] == pytest.approx(ddp.result["losses"], rel=1e-4)
    assert sum(outcome["held"] for outcome in fsdp.rank_results) == fsdp.result["total"]
