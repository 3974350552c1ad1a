"""GPU figures on one NVIDIA GPU: ``data_parallel`` at world size 1 (fp32, bf16, fp16) and ``strategy="fsdp"``
against the same loops in plain PyTorch, TRIALS short trials through ``hpo(gpus_per_trial=1)`` against a plain
loop, and whether NCCL runs two ranks on one device. Method: docs/performance/data-parallel.md, "On a GPU".
Run: ``python bench/bench_gpu.py`` (``bash scripts/gpu_check.sh`` runs it where there is a GPU).
"""

from __future__ import annotations

import os
import subprocess

import _runner
from _common import free_port, header, median
from _workloads import mlp, timed_steps

WIDTH = 8192
LAYERS = 4
BATCH = 4096
STEPS = 30
WARMUP = 5
REPEATS = 3
PRECISIONS = ("fp32", "bf16", "fp16")
TARGET_OVERHEAD = 0.05

TRIALS = 24
TRIAL_WIDTH = 2048
TRIAL_STEPS = 300


def busy_mlp(steps=STEPS, warmup=WARMUP, precision="fp32", plain=False, plain_fsdp=False):
    """Training steps of the big MLP; ``plain``: PyTorch alone, else through jupyter_dist.prepare/backward.
    ``plain_fsdp``: PyTorch's own fully_shard of every layer, in a process group the caller made."""
    import torch

    import jupyter_dist

    torch.backends.cuda.matmul.allow_tf32 = True
    device = jupyter_dist.devices()[0] if jupyter_dist.devices() else torch.device("cuda")
    torch.manual_seed(0)
    model = mlp(WIDTH, WIDTH, LAYERS).to(device)
    if plain_fsdp:
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    optimiser = torch.optim.SGD(model.parameters(), lr=1e-3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler("cuda") if plain and precision == "fp16" else None
    if not plain:
        model, optimiser = jupyter_dist.prepare(model, optimiser)  # the run's strategy and mixed_precision
    x = torch.randn(BATCH, WIDTH, device=device)
    y = torch.randint(0, 10, (BATCH,), device=device)
    torch.cuda.reset_peak_memory_stats(device)  # this run's peak, not the process's (a worker runs many)

    def step():
        optimiser.zero_grad(set_to_none=True)
        if plain:
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimiser)
                scaler.update()
            else:
                loss.backward()
                optimiser.step()
        else:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            jupyter_dist.backward(loss)
            optimiser.step()

    seconds = timed_steps(step, steps, warmup, lambda: torch.cuda.synchronize(device))
    return {
        "step_ms": 1000 * seconds / steps,
        "samples_per_s": BATCH * steps / seconds,
        "peak_memory_gb": torch.cuda.max_memory_allocated(device) / 1e9,
    }


def short_trial(lr=0.01):
    """One HPO trial: a smaller MLP trained for TRIAL_STEPS steps on the trial's GPU, reporting every 10."""
    import torch

    import jupyter_dist

    torch.backends.cuda.matmul.allow_tf32 = True
    device = jupyter_dist.devices()[0] if jupyter_dist.devices() else torch.device("cuda")
    torch.manual_seed(0)
    model = mlp(TRIAL_WIDTH, TRIAL_WIDTH).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    x = torch.randn(TRIAL_WIDTH, TRIAL_WIDTH, device=device)
    y = torch.randint(0, 10, (TRIAL_WIDTH,), device=device)
    for step in range(TRIAL_STEPS):
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimiser.step()
        if step % 10 == 9:
            jupyter_dist.report(step=step, loss=loss.item())  # outside a trial: nothing
    return loss.item()


def plain_fsdp_loop() -> dict:
    """The fp32 loop under PyTorch's own FSDP at world size 1, in this process (NCCL, no jupyter_dist)."""
    import torch
    import torch.distributed as dist

    port = free_port()
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1, device_id=torch.device("cuda", 0)
    )
    try:
        return busy_mlp(plain=True, plain_fsdp=True)
    finally:
        dist.destroy_process_group()


def data_parallel_overhead(client) -> dict:
    import jupyter_dist as jd

    def ranked(precision, strategy="ddp"):
        mixed = None if precision == "fp32" else precision
        one_gpu = {"workers": 1, "gpus_per_worker": 1, "cluster": client, "progress": False}
        exp = jd.data_parallel(
            busy_mlp, strategy=strategy, mixed_precision=mixed, precision=precision, **one_gpu
        )
        return exp.result

    ranked("bf16")  # warm up: the worker's CUDA context, NCCL, the kernels
    runs = {f"{kind}_{p}": [] for p in PRECISIONS for kind in ("plain", "data_parallel")}
    runs["plain_fsdp_fp32"], runs["fsdp_fp32"] = [], []
    for repeat in range(REPEATS):
        for precision in PRECISIONS:
            runs[f"plain_{precision}"].append(busy_mlp(precision=precision, plain=True))
            runs[f"data_parallel_{precision}"].append(ranked(precision))
        runs["plain_fsdp_fp32"].append(plain_fsdp_loop())
        runs["fsdp_fp32"].append(ranked("fp32", strategy="fsdp"))
        print(f"  repeat {repeat}: " + ", ".join(f"{k} {v[-1]['step_ms']:.2f} ms" for k, v in runs.items()))
    step_ms = {k: median([r["step_ms"] for r in v]) for k, v in runs.items()}
    return {
        "step_ms": runs,
        "median_step_ms": step_ms,
        "peak_memory_gb": {k: v[-1]["peak_memory_gb"] for k, v in runs.items()},
        "overhead_per_step": {
            p: step_ms[f"data_parallel_{p}"] / step_ms[f"plain_{p}"] - 1 for p in PRECISIONS
        },
        "fsdp_overhead_per_step_fp32": step_ms["fsdp_fp32"] / step_ms["plain_fsdp_fp32"] - 1,
        "plain_fsdp_over_plain_fp32": step_ms["plain_fsdp_fp32"] / step_ms["plain_fp32"],
    }


def hpo_on_one_gpu(client) -> dict:
    from jupyter_dist import space

    def through_hpo():
        search = {"trials": TRIALS, "metric": "loss", "mode": "min", "pruner": None, "gpus_per_trial": 1}
        exp, seconds = _runner.hpo(short_trial, {"lr": space.loguniform(1e-3, 1e-1)}, client, **search)
        assert (exp.trials["state"] == "completed").all()
        return seconds, list(exp.trials["params_lr"])

    through_hpo()  # warm up the worker's CUDA context and kernels
    hpo_s, plain_s = [], []
    for _ in range(2):
        seconds, lrs = through_hpo()
        hpo_s.append(seconds)
        plain_s.append(_runner.timed(lambda lrs=lrs: [short_trial(lr) for lr in lrs])[1])
    return {
        "trials": TRIALS,
        "hpo_seconds": hpo_s,
        "plain_loop_seconds": plain_s,
        "hpo_trials_per_s": TRIALS / median(hpo_s),
        "plain_trials_per_s": TRIALS / median(plain_s),
        "hpo_over_plain": median(plain_s) / median(hpo_s),
    }


def _nccl_rank(rank: int, port: int, results) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        tensor = torch.ones(1, device="cuda")
        dist.all_reduce(tensor)
        torch.cuda.synchronize()
        results.put((rank, f"ok: {tensor.item():g}"))
        dist.destroy_process_group()
    except Exception as exc:  # what NCCL says is the finding
        results.put((rank, f"{type(exc).__name__}: {str(exc)[:300]}"))


def nccl_two_ranks_on_one_gpu() -> dict:
    import queue

    import torch.multiprocessing as mp

    port = free_port()
    context = mp.get_context("spawn")
    results = context.Queue()
    ranks = [context.Process(target=_nccl_rank, args=(r, port, results)) for r in range(2)]
    for process in ranks:
        process.start()
    said = {}
    try:
        for _ in range(2):
            rank, outcome = results.get(timeout=60)
            said[rank] = outcome
    except queue.Empty:
        said["timeout"] = "no answer in 60 s (a hang)"
    for process in ranks:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    return said


def gpu_info() -> dict:
    import torch

    query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    try:
        smi = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        smi = None
    return {
        "name": torch.cuda.get_device_name(0),
        "nvidia_smi": smi,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
    }


def main() -> dict:
    import jupyter_dist as jd

    client = jd.get_client("local", n_workers=2, threads_per_worker=1)  # worker 0 declares the GPU
    declared = {w["name"]: w.get("resources", {}) for w in client.scheduler_info()["workers"].values()}
    sizes = ("WIDTH", "LAYERS", "BATCH", "STEPS", "WARMUP", "REPEATS", "TRIALS", "TRIAL_WIDTH", "TRIAL_STEPS")
    result = header("gpu", _runner.constants(*sizes))
    result["gpu"] = gpu_info()
    result["embedded_cluster_resources"] = declared
    result["data_parallel"] = data_parallel_overhead(client)
    result["hpo"] = hpo_on_one_gpu(client)
    jd.close_local_cluster()
    result["nccl_two_ranks_on_one_gpu"] = nccl_two_ranks_on_one_gpu()
    dp = result["data_parallel"]
    worst = max(*dp["overhead_per_step"].values(), dp["fsdp_overhead_per_step_fp32"])
    result.update(target={"overhead_per_step_at_most": TARGET_OVERHEAD}, met=worst <= TARGET_OVERHEAD)
    return result


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _runner.main("gpu", main, quick={"REPEATS": 1, "TRIALS": 4})
