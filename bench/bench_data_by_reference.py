"""Large data by reference: 32 one-second trials closing over a 500 MB array, its pickle in every task against
scattered once (automatic threshold, ``with_parameters``): wall and loopback bytes.
Method: docs/performance/checkpoints.md, "Large data by reference". Run: ``.venv/bin/python
bench/bench_data_by_reference.py`` (~6.5 min; ``--quick``, or BENCH_DATA_MB, BENCH_TRIALS, BENCH_ROUNDS).
"""

from __future__ import annotations

import os
import time

import _runner
from _common import median
from _runner import interleave, measuring

DATA_MB = float(os.environ.get("BENCH_DATA_MB", 500))
TRIALS = int(os.environ.get("BENCH_TRIALS", 32))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 2))
TRIAL_S = 1.05
WAYS = ("pickled", "automatic", "with_parameters")


# --- run on the workers (defined here so cloudpickle ships them by value) ----------------------------------
def train(data, x=0.0):
    import time

    import jupyter_dist as jd

    value = float(data[:: max(1, len(data) // 1000)].sum()) + x  # the array is really there
    time.sleep(TRIAL_S)
    jd.report(step=0, v=value)
    return value


def closing_over(array):
    def train_closure(x=0.0):
        return train(array, x)

    return train_closure


# --- the kernel side ---------------------------------------------------------------------------------------
def loopback_bytes() -> int:
    import psutil

    return psutil.net_io_counters(pernic=True)["lo"].bytes_sent


def one_run(way: str, array, client, round_no: int) -> dict:
    import dask

    import jupyter_dist as jd
    from jupyter_dist import space

    fn = jd.with_parameters(train, data=array) if way == "with_parameters" else closing_over(array)
    threshold = None if way == "pickled" else "1 MiB"
    with dask.config.set({"jupyter_dist.scatter-threshold": threshold}):
        sent0 = loopback_bytes()
        search = {"metric": "v", "pruner": None, "store": False, "parallel": 2}
        exp, wall = _runner.hpo(fn, {"x": space.uniform(0, 1)}, client, trials=TRIALS, **search)
        sent = loopback_bytes() - sent0
    assert exp.state == "completed" and len(exp.trials) == TRIALS, exp
    completed = int((exp.trials.state == "completed").sum())
    return {"way": way, "wall_s": wall, "loopback_bytes": sent, "completed": completed, "round": round_no}


def main() -> dict:
    import numpy as np

    import jupyter_dist as jd

    parameters = _runner.constants("DATA_MB", "TRIALS", "ROUNDS", "TRIAL_S", "WAYS", parallel=2)
    array = np.random.default_rng(0).random(int(DATA_MB * 1e6 / 8))
    client = jd.get_client("local", n_workers=2, threads_per_worker=1)
    idle0, t0 = loopback_bytes(), time.monotonic()
    time.sleep(5)
    idle_rate = (loopback_bytes() - idle0) / (time.monotonic() - t0)
    with measuring("data_by_reference", parameters, wall=False) as result:
        orders: list[list[str]] = []
        try:
            sides = {way: lambda r, w=way: one_run(w, array, client, r) for way in WAYS}
            runs = interleave(ROUNDS, sides, "rotate", orders=orders)
        finally:
            jd.close_local_cluster()
    by_way = {
        way: {
            "median_wall_s": median([r["wall_s"] for r in rs]),
            "median_loopback_gb": median([r["loopback_bytes"] for r in rs]) / 1e9,
        }
        for way, rs in runs.items()
    }
    pickled = by_way["pickled"]
    ratios = {
        way: {
            "bytes_pickled_over_this": pickled["median_loopback_gb"] / by_way[way]["median_loopback_gb"],
            "wall_pickled_over_this": pickled["median_wall_s"] / by_way[way]["median_wall_s"],
        }
        for way in ("automatic", "with_parameters")
    }
    result.update(
        idle_loopback_bytes_per_s=idle_rate,
        runs=[runs[way][r] for r, turn in enumerate(orders) for way in turn],  # in the order they ran
        by_way=by_way,
        ratios=ratios,
    )
    return result


if __name__ == "__main__":
    quick = {"DATA_MB": 5.0, "TRIALS": 8, "ROUNDS": 1}
    _runner.main("data_by_reference", main, quick=quick)
