"""Fractional GPUs (issue 42): trials/s of small-MLP trials at 1, 0.5, 0.25 and 0.125 of one NVIDIA GPU each.

TRIALS trials through ``hpo(gpus_per_trial=s)`` for s in SHARES, each share on the embedded cluster's
own layout (one single-thread worker process per share of the GPU), against s = 1 with ``parallel=1``:
one trial at a time. Per share: trials/s, the speed-up over one at a time, the median trial's duration,
the GPU's utilisation and memory from ``nvidia-smi`` every SAMPLE_S, and each trial's ``exp.utilization``
gpu_util where the package has it. Each layout is warmed up first (its worker processes start, and CUDA
in each), then timed REPEATS times (median). The JSON names the device (bench_gpu's ``gpu_info``).
Target: >= 3x one at a time at some share.
Run: ``python bench/bench_gpu_packing.py`` (``bash scripts/gpu_check.sh`` runs it where there is a GPU).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import threading

import _runner
from _common import header, median
from _workloads import mlp
from bench_gpu import gpu_info

SHARES = (1, 0.5, 0.25, 0.125)  # the first is the baseline: whole GPU, one trial at a time
TRIALS = 24
# One timed run per share: should packing gain nothing, 4 x TRIALS x ~2 s still ends in gpu_check.sh's 300 s.
REPEATS = 1
WIDTH = 256
LAYERS = 4
BATCH = 256
# ~1-2 s a trial alone on an H100 (eager PyTorch launches a small step's ~40 kernels in ~0.5-1 ms): the GPU
# waits on the Python thread that feeds it, far under a tenth of its compute busy: what packing should fill.
TRIAL_STEPS = 2000
WARM_STEPS = 50
REPORT_EVERY = 100
SAMPLE_S = 0.5
TARGET_SPEEDUP = 3.0


def small_trial(lr, steps):
    """One HPO trial: the small MLP trained ``steps`` steps on one fixed batch on the trial's GPU share."""
    import torch

    import jupyter_dist

    given = jupyter_dist.devices()
    if not given:  # a trial placed off the GPU workers would time the CPU: fail it, loudly
        raise RuntimeError("this trial was given no GPU")
    device = given[0]
    torch.manual_seed(0)
    model = mlp(WIDTH, WIDTH, LAYERS).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    x = torch.randn(BATCH, WIDTH, device=device)
    y = torch.randint(0, 10, (BATCH,), device=device)
    for step in range(steps):
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimiser.step()
        if step % REPORT_EVERY == REPORT_EVERY - 1:
            jupyter_dist.report(step=step, loss=loss.item())
    return {"loss": loss.item()}


class GpuSampler:
    """``nvidia-smi``'s utilisation (%) and memory used (MiB) of one GPU every SAMPLE_S, in a thread, while
    the ``with`` block runs. A separate process asks the driver: nothing in the trials or kernel changes."""

    def __init__(self, gpu: str) -> None:
        fields = "--query-gpu=utilization.gpu,memory.used"
        self.query = ["nvidia-smi", fields, "--format=csv,noheader,nounits", "-i", gpu]
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(self.query, capture_output=True, text=True, timeout=5).stdout
                util, memory = (float(v) for v in out.strip().splitlines()[0].split(","))
                self.samples.append((util, memory))
            except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
                pass  # a missed sample ("[N/A]", a slow driver) is not a failed benchmark
            self._stop.wait(SAMPLE_S)


def trial_gpu_util(exp) -> list[float] | str:
    """Each trial's mean ``gpu_util`` from ``exp.utilization`` (NVML, on the trial's worker; none where the
    package has no such frame), or what went wrong, as text, rather than losing the run's other figures."""
    try:
        frame = getattr(exp, "utilization", None)
        if frame is None or "gpu_util" not in frame:
            return []
        means = frame.groupby("trial_id")["gpu_util"].mean()
        return [round(float(v), 1) for v in means if not math.isnan(v)]
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def run(client, share: float, trials: int, steps: int):
    """``hpo()`` of ``trials`` small trials at ``share`` GPUs each; share 1 one at a time (the baseline), any
    other share as many at once as the GPU's workers take (hpo()'s default for gpus_per_trial)."""
    from jupyter_dist import space

    search = {"lr": space.loguniform(1e-3, 1e-1), "steps": steps}
    options = {"trials": trials, "metric": "loss", "mode": "min", "pruner": None, "gpus_per_trial": share}
    if share == 1:
        options["parallel"] = 1
    return _runner.hpo(small_trial, search, client, **options)


def packed(client, share: float, gpu: str) -> dict:
    """One share: its layout warmed up, then REPEATS timed runs of TRIALS trials with the GPU sampled."""
    slots = max(1, round(1 / share))
    # The first run at a share lays the GPU workers out anew (process start, torch import) and starts CUDA in
    # each worker; two short trials per worker so that every one of them has paid it before the clock runs.
    _, warm_s = run(client, share, 2 * slots, WARM_STEPS)
    seconds, samples, durations, per_trial, states, errors, util_error = [], [], [], [], {}, [], None
    for _ in range(REPEATS):
        with GpuSampler(gpu) as sampler:
            exp, s = run(client, share, TRIALS, TRIAL_STEPS)
        seconds.append(s)
        samples += sampler.samples
        trials = exp.trials
        durations += [float(d) for d in trials["duration"].dropna()]
        for state, n in trials["state"].value_counts().items():
            states[state] = states.get(state, 0) + int(n)
        errors += [e.splitlines()[0] for e in trials["error"] if e][:1]
        util = trial_gpu_util(exp)
        if isinstance(util, str):
            util_error = util
        else:
            per_trial += util
    utils, memory = [u for u, _ in samples], [m for _, m in samples]
    out = {
        "slots": slots,
        "warmup_seconds": warm_s,
        "seconds": seconds,
        "trials_per_s": TRIALS / median(seconds),
        "trial_seconds_median": median(durations) if durations else None,
        "states": states,
        "all_completed": states == {"completed": TRIALS * REPEATS},
        "first_error": errors[0] if errors else None,
        "gpu_samples": len(samples),
        "gpu_util_mean": sum(utils) / len(utils) if utils else None,
        "gpu_util_max": max(utils, default=None),
        "gpu_memory_max_mib": max(memory, default=None),
        "trial_gpu_util_mean": sum(per_trial) / len(per_trial) if per_trial else None,
        "trial_gpu_util": per_trial or None,
        "trial_gpu_util_error": util_error,
    }
    print(
        _runner.brief(f"share {share:g}", {k: out[k] for k in ("trials_per_s", "gpu_util_mean")}), flush=True
    )
    return out


def need_gpu() -> None:
    """Stop at once, with the reason, on a machine where there is nothing to measure."""
    try:
        import torch
    except ImportError:
        raise SystemExit("bench_gpu_packing needs an NVIDIA GPU: torch is not installed") from None
    if not torch.cuda.is_available():  # asks the driver without starting CUDA in this process
        raise SystemExit(
            f"bench_gpu_packing needs an NVIDIA GPU: torch {torch.__version__} "
            f"({'CUDA ' + torch.version.cuda if torch.version.cuda else 'a CPU-only build'}) sees none here "
            "(torch.cuda.is_available() is False); run it through scripts/gpu_check.sh on a GPU machine"
        )


def main() -> dict:
    need_gpu()
    import jupyter_dist as jd

    client = jd.get_client("local", n_workers=2, threads_per_worker=1)  # worker 0 becomes the GPU's
    declared = {w["name"]: w.get("resources", {}) for w in client.scheduler_info()["workers"].values()}
    if not any("GPU" in r for r in declared.values()):
        jd.close_local_cluster()
        raise SystemExit(
            f"bench_gpu_packing needs an NVIDIA GPU: the embedded cluster declared none ({declared})"
        )
    sizes = ("TRIALS", "REPEATS", "WIDTH", "LAYERS", "BATCH", "TRIAL_STEPS", "WARM_STEPS", "SAMPLE_S")
    result = header("gpu_packing", _runner.constants(*sizes, shares=list(SHARES)))
    result["embedded_cluster_resources"] = declared
    # nvidia-smi numbers GPUs as the driver does, whatever CUDA_VISIBLE_DEVICES says: ask for the one the
    # embedded cluster's GPU worker sees (an index or a UUID, both of which -i takes).
    gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    result["sampled_gpu"] = gpu if shutil.which("nvidia-smi") else None
    runs: dict[str, dict] = {}
    try:
        for share in SHARES:
            try:
                runs[f"{share:g}"] = packed(client, share, gpu)
            except Exception as e:  # one share's failure is a finding; the others' figures still count
                if share == SHARES[0]:
                    raise
                runs[f"{share:g}"] = {"error": f"{type(e).__name__}: {e}"}
                print(f"  share {share:g}: FAILED {runs[f'{share:g}']['error']}", flush=True)
    finally:
        jd.close_local_cluster()
    # After the workers are gone: the kernel's own CUDA context (gpu_info starts one) stays out of the timing.
    result["gpu"] = gpu_info()
    base = runs[f"{SHARES[0]:g}"]["trials_per_s"]
    for figures in runs.values():
        if "error" not in figures:
            figures["speedup"] = figures["trials_per_s"] / base
    best = max((f.get("speedup", 0.0) for key, f in runs.items() if key != f"{SHARES[0]:g}"), default=0.0)
    result["shares"] = runs
    result["best_fractional_speedup"] = best
    completed = all(figures.get("all_completed") for figures in runs.values())
    result.update(target={"speedup_at_least": TARGET_SPEEDUP}, met=completed and best >= TARGET_SPEEDUP)
    return result


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _runner.main("gpu_packing", main, quick={"TRIALS": 8, "TRIAL_STEPS": 200})
