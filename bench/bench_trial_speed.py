"""Trial speed: TPE trials of the digits and the compute-bound MLP through ``hpo(parallel=2)`` against the same
configurations in a spawn ``Pool(2)``, each side first in half of the rounds. Target: pool wall / hpo wall >= 0.95
(median). Method: docs/performance/dispatch.md. Run: ``.venv/bin/python bench/bench_trial_speed.py [--rounds 8]``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time

import _runner
from _common import CpuMonitor, glibc_malloc, machine_busy_share, median
from _runner import brief, local_cluster, measuring
from _workloads import (
    COMPUTE_BATCH,
    COMPUTE_WIDTH,
    DIGITS_BATCH,
    train_compute_mlp,
    train_digits_mlp,
    warm_digits_imports,
)

N_WORKERS = 2
SEED = 0
ROUNDS = 8  # even: each side goes first in half the rounds
TARGET_RATIO = 0.95
# a) digits
DIGITS_TRIALS = 24
DIGITS_EPOCHS = 20
# b) compute-bound (bench_ddp's MLP)
COMPUTE_TRIALS = 8
COMPUTE_STEPS = 12


# --- the two workloads at this benchmark's sizes: shipped to the workers by value (as __main__'s), and run by
# the pool and the sequential reference -------------------------------------------------------------------------
def digits_mlp(lr, width, momentum):
    return train_digits_mlp(lr, width, momentum, weight_decay=0.0, epochs=DIGITS_EPOCHS)


def compute_mlp(lr):
    return train_compute_mlp(lr, COMPUTE_STEPS)


def _space(workload: str) -> dict:
    from jupyter_dist import space

    if workload == "digits":
        return {
            "lr": space.loguniform(1e-3, 0.3),
            "width": space.integer(16, 256),
            "momentum": space.uniform(0.0, 0.95),
        }
    return {"lr": space.loguniform(1e-4, 0.1)}


WORKLOADS = {
    # name: (function, metric, mode, trials)
    "digits": (digits_mlp, "val_acc", "max", DIGITS_TRIALS),
    "compute": (compute_mlp, "loss", "min", COMPUTE_TRIALS),
}


# --- the plain pool's side -------------------------------------------------------------------------------------
def _pool_call(task: tuple[str, dict]) -> dict:
    workload, params = task
    fn = WORKLOADS[workload][0]
    started = time.time()
    fn(**params)
    return {"started": started, "duration": time.time() - started, "pid": os.getpid()}


@contextlib.contextmanager
def _plain_pool(processes: int):
    """A spawn pool with glibc's allocator defaults, its processes started and their imports warmed."""
    with glibc_malloc():
        pool = multiprocessing.get_context("spawn").Pool(processes, initializer=warm_digits_imports)
        pool.map(abs, range(processes * 4), chunksize=1)  # wait until every process has started and warmed
    try:
        yield pool
    finally:
        pool.close()
        pool.join()


def _side(wall: float, durations: list[float], cpu: CpuMonitor, **more) -> dict:
    return {
        "wall_s": wall,
        "trial_seconds": sum(durations),
        "busy_share": sum(durations) / (N_WORKERS * wall),
        "durations": durations,
        **more,
        "cpu_contention": cpu.stop(),
    }


def run_pool(workload: str, configs: list[dict]) -> dict:
    cpu = CpuMonitor()
    with _plain_pool(N_WORKERS) as pool:
        tasks = [(workload, c) for c in configs]
        calls, wall = _runner.timed(lambda: list(pool.imap_unordered(_pool_call, tasks, chunksize=1)))
    return _side(wall, [c["duration"] for c in calls], cpu)


def run_sequential(workload: str, configs: list[dict]) -> list[float]:
    """Each configuration's time run one after another in one plain warmed process (a pool of one)."""
    with _plain_pool(1) as pool:
        calls = pool.map(_pool_call, [(workload, c) for c in configs], chunksize=1)
    return [c["duration"] for c in calls]


# --- jupyter_dist's side ---------------------------------------------------------------------------------------
def run_ours(workload: str) -> tuple[dict, list[dict]]:
    """One hpo() run on a new embedded LocalCluster."""
    import psutil

    import jupyter_dist

    fn, metric, mode, trials = WORKLOADS[workload]
    cpu = CpuMonitor()
    jupyter_dist.close_local_cluster()
    with local_cluster(N_WORKERS) as client:
        kernel = psutil.Process()
        workers = kernel.children(recursive=True)
        kernel_cpu0 = sum(kernel.cpu_times()[:2])
        workers_cpu0 = sum(sum(w.cpu_times()[:2]) for w in workers)
        search = {"metric": metric, "mode": mode, "sampler": "tpe", "pruner": None, "seed": SEED}
        exp, wall = _runner.hpo(fn, _space(workload), client, trials=trials, parallel=N_WORKERS, **search)
        # This process runs the kernel's side: the Dask scheduler and nannies (in-process), Optuna, the client.
        kernel_cpu = sum(kernel.cpu_times()[:2]) - kernel_cpu0
        workers_cpu = sum(sum(w.cpu_times()[:2]) for w in workers) - workers_cpu0
    records = exp.trial_records()
    bad = [(r.trial_id, r.state, r.error) for r in records if r.state != "completed"]
    assert not bad, bad
    figures = {"kernel_process_cpu_s": kernel_cpu, "worker_processes_cpu_s": workers_cpu}
    side = _side(wall, [r.duration for r in records], cpu, reports=exp.reports, **figures)
    return side, [dict(r.params) for r in records]


def main(rounds: int, workloads: str) -> dict:
    parameters = {
        "rounds": rounds,
        "workloads": {
            "digits": f"MLP 64->w->w->10 on sklearn digits, SGD(lr, momentum), batch {DIGITS_BATCH}, "
            f"{DIGITS_EPOCHS} epochs, report(val_acc) each epoch; TPE over lr, width, momentum; "
            f"{DIGITS_TRIALS} trials",
            "compute": f"MLP 512->{COMPUTE_WIDTH}->{COMPUTE_WIDTH}->10, batch {COMPUTE_BATCH}, "
            f"{COMPUTE_STEPS} SGD steps, report(loss) each step; TPE over lr; {COMPUTE_TRIALS} trials",
        },
        "torch_threads": 1,
        "ours": f"hpo(fn, space, trials, sampler='tpe', pruner=None, seed={SEED}, parallel={N_WORKERS}, "
        f"progress=False) on a fresh get_client('local', n_workers={N_WORKERS}, threads_per_worker=1) per "
        "round; timed around hpo()",
        "pool": f"multiprocessing spawn Pool({N_WORKERS}) per round, imports warmed, glibc allocator defaults, "
        "the hpo run's configurations, imap_unordered(chunksize=1); timed around the map",
        "sequential": "the last round's configurations one after another in one plain warmed process",
    }
    busy_at_start = machine_busy_share(1.0)
    with measuring("trial_speed", parameters) as result:
        out = measure(rounds, workloads.split(","))
        result.update(
            machine_busy_share_at_start=busy_at_start,
            results=out,
            target={
                "ratio_pool_over_ours_at_least": TARGET_RATIO,
                "judged_on": "median of the rounds' paired ratios",
            },
            met=all(w["met"] for w in out.values()),
        )
    return result


def _by_side(rows: list[dict], key: str) -> dict:
    """Each side's median of ``key`` over the rounds."""
    return {side: median([row[side][key] for row in rows]) for side in ("ours", "pool")}


def measure(rounds: int, workloads: list[str]) -> dict:
    warm_digits_imports()  # this process: the hpo side's kernel, as a notebook would have it
    out: dict = {}
    for workload in workloads:
        rows = []
        configs: list[dict] = []
        for r in range(rounds):
            first = "ours" if r % 2 == 0 else "pool"
            row: dict = {"first": first}
            if first == "pool" and configs:  # the previous round's configurations (TPE with a fixed seed)
                row["pool"] = run_pool(workload, configs)
            row["ours"], configs = run_ours(workload)
            if "pool" not in row:
                row["pool"] = run_pool(workload, configs)
            row["ratio"] = row["pool"]["wall_s"] / row["ours"]["wall_s"]
            rows.append(row)
            walls = {side: row[side]["wall_s"] for side in ("ours", "pool")}
            print(brief(f"{workload} round {r}, walls", {**walls, "ratio": row["ratio"]}), flush=True)
        sequential = run_sequential(workload, configs)
        med, trial_s = _by_side(rows, "wall_s"), _by_side(rows, "trial_seconds")
        ratio = median([row["ratio"] for row in rows])
        out[workload] = {
            "rounds": rows,
            "configs_last_round": configs,
            "sequential_durations_s": sequential,
            "sequential_trial_seconds": sum(sequential),
            "median_wall_s": med,
            "median_trial_seconds": trial_s,
            "trial_seconds_over_sequential": {side: trial_s[side] / sum(sequential) for side in trial_s},
            "median_busy_share": _by_side(rows, "busy_share"),
            "ratios_per_round": [row["ratio"] for row in rows],
            "ratio_pool_over_ours": ratio,
            "ratio_of_median_walls": med["pool"] / med["ours"],
            "met": ratio >= TARGET_RATIO,
        }
    return out


if __name__ == "__main__":
    small = {"digits": (digits_mlp, "val_acc", "max", 4), "compute": (compute_mlp, "loss", "min", 2)}
    quick = {"DIGITS_EPOCHS": 3, "COMPUTE_STEPS": 3, "WORKLOADS": small}
    _runner.main("trial_speed", main, {"rounds": ROUNDS, "workloads": "digits,compute"}, quick=quick)
