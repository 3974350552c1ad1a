"""FSDP against DDP on 2 CPU ranks: samples/s, model state and peak RSS growth per rank, interleaved. No target.
Method: docs/performance/data-parallel.md, "FSDP against DDP". Run: ``.venv/bin/python bench/bench_fsdp.py``.
"""

from __future__ import annotations

import _runner
from _common import median
from _runner import interleave, local_cluster, measuring
from _workloads import mlp, timed_steps

WIDTH = 2048
DEPTH = 4
BATCH = 64
STEPS = 10
WARMUP = 2
ROUNDS = 3


# --- run on the workers (defined here so cloudpickle ships them by value) ----------------------------------
def train(width=WIDTH, depth=DEPTH, batch=BATCH, steps=STEPS, warmup=WARMUP):
    import threading
    import time

    import psutil
    import torch

    import jupyter_dist as jd

    process = psutil.Process()
    before = peak = process.memory_info().rss
    sampling = True

    def sample():
        nonlocal peak
        while sampling:
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    torch.manual_seed(0)
    model = mlp(width, width, depth)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)
    model, optimiser = jd.prepare(model, optimiser)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))

    def step():
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimiser.step()

    elapsed = timed_steps(step, steps, warmup, torch.distributed.barrier)
    sampling = False
    sampler.join()

    def local(t):
        return t.to_local() if hasattr(t, "to_local") else t

    tensors = [local(p) for p in model.parameters()] + [local(p.grad) for p in model.parameters()]
    tensors += [local(v) for s in optimiser.state.values() for v in s.values() if torch.is_tensor(v)]
    return {
        "samples_per_s": jd.world_size() * batch * steps / elapsed,
        "model_state_mb": sum(t.numel() * t.element_size() for t in tensors) / 1e6,
        "peak_rss_growth_mb": (peak - before) / 1e6,
    }


def one_run(client, strategy: str) -> dict:
    import jupyter_dist as jd

    # Fresh worker processes: memory an earlier run freed stays in the process (the allocator keeps it), and the
    # next run's peak would hide in it.
    client.restart(wait_for_workers=True)
    exp = jd.data_parallel(
        train, workers=2, threads_per_rank=1, strategy=strategy, cluster=client, progress=False
    )
    return {"rank_0": exp.rank_results[0], "rank_1": exp.rank_results[1]}


def main() -> dict:
    import jupyter_dist as jd

    parameters = {
        "model": f"MLP, {DEPTH} x Linear({WIDTH}, {WIDTH}) + Linear({WIDTH}, 10), Adam",
        "per_rank_batch": BATCH,
        "steps": STEPS,
        "rounds": ROUNDS,
        "cluster": "embedded LocalCluster, 2 workers x 1 thread, gloo",
    }
    with measuring("fsdp", parameters, wall=False, note=True) as result:
        with local_cluster(timeout=None) as client:
            for strategy in ("ddp", "fsdp"):  # warm-up: imports, first process groups
                jd.data_parallel(train, workers=2, strategy=strategy, cluster=client, progress=False, steps=1)
            runs = interleave(ROUNDS, {s: lambda r, s=s: one_run(client, s) for s in ("ddp", "fsdp")})

        def per_rank(rs: list[dict], key: str) -> float:
            return median([r[k][key] for r in rs for k in ("rank_0", "rank_1")])

        medians = {
            strategy: {
                "samples_per_s": median([r["rank_0"]["samples_per_s"] for r in rs]),
                "model_state_mb_per_rank": per_rank(rs, "model_state_mb"),
                "peak_rss_growth_mb_per_rank": per_rank(rs, "peak_rss_growth_mb"),
            }
            for strategy, rs in runs.items()
        }
        fsdp, ddp = medians["fsdp"], medians["ddp"]
        rss_growth = "peak_rss_growth_mb_per_rank"
        result.update(
            median=medians,
            all=runs,
            ratios_fsdp_vs_ddp={
                "samples_per_s": fsdp["samples_per_s"] / ddp["samples_per_s"],
                "model_state_per_rank": fsdp["model_state_mb_per_rank"] / ddp["model_state_mb_per_rank"],
                "peak_rss_growth_per_rank": fsdp[rss_growth] / ddp[rss_growth],
            },
        )
    return result


if __name__ == "__main__":
    _runner.main("fsdp", main, quick={"ROUNDS": 1})
