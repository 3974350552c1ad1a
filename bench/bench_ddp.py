"""CPU data-parallel scaling: samples/s of the compute-bound MLP through ``data_parallel()`` at 1 and 2 ranks
against a plain loop and plain PyTorch DDP, interleaved. Target: >= 1.6x at 2 ranks. Method:
docs/performance/data-parallel.md. Run: ``.venv/bin/python bench/bench_ddp.py``.
"""

from __future__ import annotations

import _runner
from _common import free_port, glibc_malloc, median
from _runner import interleave, local_cluster, measuring
from _workloads import COMPUTE_BATCH, COMPUTE_WIDTH, data_parallel_mlp

WIDTH = COMPUTE_WIDTH
PER_RANK_BATCH = COMPUTE_BATCH
STEPS = 30
WARMUP = 3
REPEATS = 5
TARGET_SCALING = 1.6


def plain_loop() -> float:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return data_parallel_mlp(STEPS, WARMUP)["samples_per_s"]
    finally:
        torch.set_num_threads(threads)


def _torch_ddp_rank(rank: int, world: int, port: int, results) -> None:
    import torch

    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        result = data_parallel_mlp(STEPS, WARMUP, wrap_myself=True)
    finally:
        torch.distributed.destroy_process_group()
    if rank == 0:
        results.put(result["samples_per_s"])


def plain_torch_ddp(world: int = 2) -> float:
    """Samples/s of the same training under DistributedDataParallel in processes started by torch itself."""
    import torch.multiprocessing as mp

    port = free_port()
    context = mp.get_context("spawn")
    results = context.Queue()
    with glibc_malloc():  # the reference runs as it would outside Dask
        ranks = [
            context.Process(target=_torch_ddp_rank, args=(r, world, port, results)) for r in range(world)
        ]
        for process in ranks:
            process.start()
    rate = results.get(timeout=120)
    for process in ranks:
        process.join(timeout=60)
    return rate


def _ranked(client, ranks: int, steps: int) -> float:
    import jupyter_dist as jd

    options = {"threads_per_rank": 1, "cluster": client, "progress": False}
    exp = jd.data_parallel(data_parallel_mlp, workers=ranks, steps=steps, warmup=WARMUP, **options)
    return exp.result["samples_per_s"]


def main() -> dict:
    parameters = _runner.constants("WIDTH", "PER_RANK_BATCH", "STEPS", "WARMUP", "REPEATS")
    with measuring("ddp", parameters, wall=False) as result:
        with local_cluster(timeout=None) as client:
            _ranked(client, 2, 3)  # warm up
            sides = {
                "plain": lambda r: plain_loop(),
                "ranks_1": lambda r: _ranked(client, 1, STEPS),
                "ranks_2": lambda r: _ranked(client, 2, STEPS),
                "torch_ddp_2": lambda r: plain_torch_ddp(2),
            }
            runs = interleave(REPEATS, sides)
        medians = {k: median(v) for k, v in runs.items()}
        scaling = medians["ranks_2"] / medians["ranks_1"]
        result.update(
            samples_per_s=runs,
            median_samples_per_s=medians,
            scaling_2_over_1=scaling,
            efficiency_2=scaling / 2,
            one_rank_over_plain_loop=medians["ranks_1"] / medians["plain"],
            two_ranks_over_torch_ddp=medians["ranks_2"] / medians["torch_ddp_2"],
            torch_ddp_scaling_over_plain_loop=medians["torch_ddp_2"] / medians["plain"],
            target={"scaling_at_least": TARGET_SCALING},
            met=scaling >= TARGET_SCALING,
        )
    return result


if __name__ == "__main__":
    _runner.main("ddp", main, quick={"STEPS": 5, "REPEATS": 1})
