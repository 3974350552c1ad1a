"""Every CUDA path on a real GPU (marked `gpu`: skipped in CI, which has none; run on a machine with one by
`bash scripts/gpu_check.sh`). One GPU is enough: data-parallel at world size 1 with NCCL, two ranks sharing the
device with gloo, mixed precision, FSDP, checkpoints moving between the GPU and the CPU, HPO trials holding the
device one at a time through an out-of-memory error, a trial running out of memory past its share of the
device, and a notebook kernel that touched CUDA before its runs."""

from __future__ import annotations

import json
import time

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from torch.utils.data import DataLoader, TensorDataset

import jupyter_dist as jd
from jupyter_dist import space

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
]


def _cluster(workers: int, threads: int):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=threads, resources={"GPU": 1}, host="127.0.0.1"
    )
    return cluster, Client(cluster)


@pytest.fixture(scope="module")
def gpu_worker():
    """One worker declaring the machine's GPU (GPU=1) with two threads: Dask could run two trials at once, the
    resource lets it run one."""
    cluster, client = _cluster(workers=1, threads=2)
    with cluster, client:
        yield client


@pytest.fixture(scope="module")
def two_workers_one_gpu():
    """Two workers that both declare, and see, the same single GPU."""
    cluster, client = _cluster(workers=2, threads=1)
    with cluster, client:
        yield client


# --- data-parallel ------------------------------------------------------------------------------------------------


def regression_model():
    """The model the runs below train and the notebook side loads their checkpoints into."""
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def mlp(epochs=4, fail_at=None, per_rank_batch=32):
    """A small regression trained on the GPU; the same code runs alone (the reference) and as a rank."""
    device = jd.devices()[0] if jd.devices() else torch.device("cuda")
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(256, 16, generator=data), torch.randn(256, 1, generator=data)
    model = regression_model()
    model = jd.prepare(model.to(device))  # DDP or FSDP in a run (data_parallel(strategy=)); alone, itself
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)  # after prepare: FSDP's parameters
    loader = jd.prepare(DataLoader(TensorDataset(x, y), batch_size=per_rank_batch, shuffle=False))
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    losses, batch_devices = [], set()
    for epoch in range(start, epochs):
        for xb, yb in loader:
            batch_devices.add(xb.device.type)  # where prepare()'s loader put the batch, before any .to()
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb.to(device)), yb.to(device))
            loss.backward()
            optimiser.step()
        losses.append(loss.item())
        jd.report(step=epoch, loss=loss.item())
        jd.checkpoint(epoch, state)
        if epoch == fail_at:
            raise RuntimeError("preempted")
    full = jd.unwrap(model).state_dict()
    return {
        "weights": {
            k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone() for k, v in full.items()
        },
        "losses": losses,
        "batch_devices": sorted(batch_devices),
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "model": type(model).__name__,
        "world": jd.world_size(),
    }


def _same_weights(a: dict, b: dict, atol: float = 1e-5) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k].cpu(), b[k].cpu(), atol=atol) for k in a)


def test_world_size_one_with_nccl_trains_as_a_plain_loop_on_the_same_gpu(gpu_worker):
    exp = jd.data_parallel(mlp, workers=1, gpus_per_worker=1, cluster=gpu_worker, progress=False)
    ranked, alone = exp.result, mlp()
    assert ranked["backend"] == "nccl" and ranked["world"] == 1
    assert ranked["batch_devices"] == ["cuda"]  # the prepared loader moved every batch to the rank's GPU
    assert all(w.device.type == "cuda" for w in ranked["weights"].values())
    assert _same_weights(ranked["weights"], alone["weights"])
    assert ranked["losses"] == pytest.approx(alone["losses"], rel=1e-4)


def autocast_training(steps=40):
    device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.GELU(), torch.nn.Linear(256, 1)).to(device)
    inside = []
    model[0].register_forward_hook(lambda module, inputs, output: inside.append(output.dtype))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimiser = jd.prepare(model, optimiser)  # the run's mixed_precision= applies
    x = torch.randn(512, 32, device=device)
    y = x[:, :4].sum(dim=1, keepdim=True)
    losses = []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        jd.backward(loss)  # scaled under fp16, plain otherwise
        optimiser.step()
        losses.append(loss.item())
    scaler = getattr(optimiser, "scaler", None)
    return {
        "inside": str(inside[0]),
        "returned": str(model(x).dtype),
        "losses": losses,
        "scale": scaler.get_scale() if scaler is not None else None,
        "parameters": str(next(model.parameters()).dtype),
    }


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_trains_end_to_end_on_the_gpu(gpu_worker, precision):
    exp = jd.data_parallel(
        autocast_training,
        workers=1,
        gpus_per_worker=1,
        mixed_precision=precision,
        cluster=gpu_worker,
        progress=False,
    )
    out = exp.result
    assert out["inside"] == {"bf16": "torch.bfloat16", "fp16": "torch.float16"}[precision]
    assert out["returned"] == "torch.float32" and out["parameters"] == "torch.float32"  # master weights
    assert all(map(torch.isfinite, map(torch.tensor, out["losses"])))
    assert out["losses"][-1] < 0.5 * out["losses"][0]
    if precision == "fp16":
        assert out["scale"] >= 2.0**10  # the CUDA gradient scaler is at work
    else:
        assert out["scale"] is None  # bf16 needs none


def test_fsdp_on_the_gpu_trains_as_ddp_does(gpu_worker):
    common = dict(workers=1, gpus_per_worker=1, cluster=gpu_worker, progress=False)
    ddp = jd.data_parallel(mlp, **common).result
    fsdp = jd.data_parallel(mlp, strategy="fsdp", **common).result
    assert fsdp["model"] == "FSDPSequential" and ddp["model"] == "Sequential"  # FSDP even at world size 1
    assert fsdp["losses"] == pytest.approx(ddp["losses"], rel=1e-4)
    assert _same_weights(fsdp["weights"], ddp["weights"], atol=1e-4)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_checkpoints_saved_on_the_gpu_restore_on_the_cpu_and_back(gpu_worker, tmp_path, strategy):
    common = dict(workers=1, gpus_per_worker=1, cluster=gpu_worker, progress=False, checkpoint_dir=tmp_path)
    with pytest.raises(jd.ExperimentFailed, match="RuntimeError: preempted"):
        jd.data_parallel(mlp, name="gpu-run", fail_at=1, strategy=strategy, **common)
    resumed = jd.data_parallel(mlp, name="gpu-run", resume=True, strategy=strategy, **common)
    assert resumed.trial_records()[0].resumed_from == 1  # the GPU tensors came back from the checkpoint...
    straight = jd.data_parallel(mlp, strategy=strategy, **common)
    assert _same_weights(resumed.result["weights"], straight.result["weights"])  # ...and it went on alike

    folder = resumed.checkpoint()
    on_cpu = regression_model()
    jd.restore({"model": on_cpu}, path=folder)  # in this process, on the CPU
    assert _same_weights(on_cpu.state_dict(), resumed.result["weights"])
    back = regression_model().cuda()
    jd.restore({"model": back}, path=folder)  # and onto the GPU again
    assert all(w.is_cuda for w in back.state_dict().values())
    assert _same_weights(back.state_dict(), resumed.result["weights"])


def test_a_checkpoint_saved_on_the_cpu_resumes_on_the_gpu(gpu_worker, tmp_path):
    common = dict(workers=1, cluster=gpu_worker, progress=False, checkpoint_dir=tmp_path, name="moved")
    cpu_rank = jd.data_parallel(mlp_on_cpu, gpus_per_worker=0, **common)
    assert cpu_rank.result["device"] == "cpu"
    folder = cpu_rank.checkpoint()
    model = regression_model().cuda()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    loaded = jd.restore({"model": model, "optimiser": optimiser}, path=folder)
    assert loaded.step == 1
    state = optimiser.state_dict()["state"]
    assert state and all(s["exp_avg"].is_cuda for s in state.values())  # Adam's moments followed the model
    assert _same_weights(model.state_dict(), cpu_rank.result["weights"])


def mlp_on_cpu(epochs=2):
    torch.manual_seed(0)
    model = jd.prepare(regression_model())
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    x = torch.randn(64, 16)
    for epoch in range(epochs):
        optimiser.zero_grad()
        model(x).pow(2).mean().backward()
        optimiser.step()
        jd.checkpoint(epoch, {"model": model, "optimiser": optimiser})
    weights = {k: v.detach().clone() for k, v in jd.unwrap(model).state_dict().items()}
    return {"weights": weights, "device": next(model.parameters()).device.type}


def test_two_ranks_share_the_gpu_with_gloo_and_nccl_refuses_at_once(two_workers_one_gpu):
    shared = dict(workers=2, gpus_per_worker=1, cluster=two_workers_one_gpu, progress=False)
    exp = jd.data_parallel(mlp, backend="gloo", per_rank_batch=16, **shared)
    assert exp.result["backend"] == "gloo" and exp.result["batch_devices"] == ["cuda"]
    alone = mlp(per_rank_batch=32)  # one process on the global batch
    assert _same_weights(
        exp.result["weights"], alone["weights"], atol=1e-4
    )  # gloo all-reduced the CUDA gradients
    started = time.monotonic()
    with pytest.raises(jd.ExperimentFailed, match="ranks 0, 1 share one GPU") as refused:
        jd.data_parallel(mlp, per_rank_batch=16, **shared)  # NCCL, the default on GPUs
    assert "backend='gloo'" in refused.value.experiment.trials.error[0]
    assert time.monotonic() - started < 30


# --- HPO trials -------------------------------------------------------------------------------------------------

OOM = 0.5  # the x of the trial that runs out of memory (enqueued: it runs first)


def busy_on_its_gpu(x=0.0):
    device = jd.devices()[0]
    started = time.time()
    held_at_start = torch.cuda.memory_reserved(device)  # anything a trial before this one left behind
    if x == OOM:
        free, _ = torch.cuda.mem_get_info(device)
        hog = torch.empty(int(free * 0.6), dtype=torch.uint8, device=device)
        torch.empty(int(free * 0.6), dtype=torch.uint8, device=device)  # more than is left: out of memory
        hog.zero_()  # never reached; hog stays referenced by this frame, as a model and batches would
    a = torch.randn(4096, 4096, device=device)
    for _ in range(100):
        a = torch.tanh(a @ a)
    torch.cuda.synchronize(device)
    utilisation = torch.cuda.utilization(device)  # the device's busy share over the last sample period
    print(
        json.dumps(
            {
                "device": str(device),
                "start": started,
                "end": time.time(),
                "held_at_start": held_at_start,
                "allocated": torch.cuda.memory_allocated(device),
                "utilisation": utilisation,
            }
        )
    )
    return float(a.mean().item()) + x


def test_hpo_trials_compute_on_their_gpu_one_at_a_time_and_an_oom_frees_it(gpu_worker):
    exp = jd.hpo(
        busy_on_its_gpu,
        {"x": space.uniform(0, 1)},
        trials=5,
        metric="x",
        sampler="random",
        cluster=gpu_worker,
        progress=False,
        gpus_per_trial=1,
        enqueue=[{"x": OOM}],
    )
    trials = exp.trials.set_index("trial_id")
    assert trials.loc[0, "state"] == "failed"
    assert "OutOfMemoryError" in trials.loc[0, "error"] and "CUDA out of memory" in trials.loc[0, "error"]
    assert trials.loc[0, "error_kind"] == "memory"
    assert trials.loc[0, "error"].startswith("out of memory on cuda:0 (this trial holds 1 GPU, peak ")
    assert (trials.drop(index=0)["state"] == "completed").all()  # the next trials on the device ran
    runs = [json.loads(exp.logs(t).strip().splitlines()[-1]) for t in trials.index[1:]]
    assert {r["device"] for r in runs} == {"cuda:0"}
    assert all(r["allocated"] > 4096 * 4096 * 4 and r["utilisation"] > 0 for r in runs)  # computing there
    assert all(r["held_at_start"] < 2**30 for r in runs)  # the failed trial's ~60% of the card was given back
    spans = sorted((r["start"], r["end"]) for r in runs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # never two at once on it


def past_its_share(batch=1):
    device = jd.devices()[0]
    total = torch.cuda.get_device_properties(device).total_memory
    held = torch.empty(int(total * 0.15), dtype=torch.uint8, device=device)  # within its quarter of the card
    torch.empty(int(total * 0.2), dtype=torch.uint8, device=device)  # 0.35 of it: past its quarter
    return float(held.numel() * batch)


def test_a_trial_past_its_share_of_the_gpu_runs_out_of_memory_there_and_says_so(gpu_worker):
    with pytest.raises(jd.ExperimentFailed) as failed:  # its only trial failed
        jd.hpo(
            past_its_share,
            {"batch": space.choice([1])},
            trials=1,
            metric="v",
            cluster=gpu_worker,
            progress=False,
            gpus_per_trial=0.25,  # alone in its process: torch caps the process at its share
            max_failures=1,
        )
    exp = failed.value.experiment
    t = exp.trials.iloc[0]
    assert t.state == "failed" and t.error_kind == "memory" and t.attempts == 1  # not retried: it would again
    cause = t.error.splitlines()[0]
    assert cause.startswith("out of memory on cuda:0 (this trial's share: 0.25 of the GPU, peak "), cause
    total = torch.cuda.get_device_properties(0).total_memory
    peak = float(cause.rsplit("peak ", 1)[1].removesuffix(" GiB)"))
    # what it held when the next allocation failed
    assert peak == pytest.approx(total * 0.15 / 2**30, abs=0.2)
    assert "OutOfMemoryError" in t.error  # its traceback follows
    assert "1 trial ran out of memory (at batch=1)" in exp.status_line()


# --- a notebook that touched CUDA first ------------------------------------------------------------------------

KERNEL_TOUCHED_CUDA = [
    """import torch
import jupyter_dist as jd
from jupyter_dist import space

model = torch.nn.Linear(8, 1).cuda()  # the kernel uses the GPU before any run
print("initialised:", torch.cuda.is_initialized())""",
    """def train(lr=0.1):
    device = jd.devices()[0]
    torch.manual_seed(0)
    net = torch.nn.Linear(8, 1).to(device)
    optimiser = torch.optim.SGD(net.parameters(), lr=lr)
    x = torch.randn(64, 8, device=device)
    y = x.sum(dim=1, keepdim=True)
    for step in range(20):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimiser.step()
        jd.report(step=step, loss=loss.item())
    return loss.item()

exp = jd.hpo(train, {"lr": space.loguniform(1e-3, 1e-1)}, trials=4, metric="loss", mode="min",
             pruner=None, gpus_per_trial=1, progress=False)
print("hpo:", exp.state, sorted(set(exp.trials.state)))""",
    """def ranked(steps=5):
    net = jd.prepare(torch.nn.Linear(8, 1))
    for _ in range(steps):
        net(torch.randn(16, 8, device=jd.devices()[0])).sum().backward()
    return {"device": str(next(net.parameters()).device), "backend": torch.distributed.get_backend()}

run = jd.data_parallel(ranked, workers=1, gpus_per_worker=1, progress=False)
print("ddp:", run.state, run.result["device"], run.result["backend"])""",
    """import dask

jd.close_local_cluster()
try:
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        jd.hpo(train, {"lr": space.loguniform(1e-3, 1e-1)}, trials=1, metric="loss", gpus_per_trial=1)
except jd.ClusterError as refused:
    print("refused:", refused)""",
]


def test_a_kernel_that_touched_cuda_runs_hpo_and_data_parallel_on_the_embedded_cluster(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in KERNEL_TOUCHED_CUDA])
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    printed = ["".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    assert [text.strip() for text in printed[:3]] == [
        "initialised: True",
        "hpo: completed ['completed']",
        "ddp: completed cuda:0 nccl",
    ], printed
    assert printed[3].startswith("refused: CUDA is initialised in this kernel") and "'spawn'" in printed[3], (
        printed
    )
