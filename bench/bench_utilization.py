"""What sampling the trials' utilisation costs them: the same CPU-bound trials (pure Python, a fixed amount of work
calibrated to ~TRIAL_S here) through ``hpo(parallel=2)`` with dask config ``jupyter_dist.utilization`` true and
false on the workers, side by side, ROUNDS rounds, the order alternating. Judged on the median over rounds of each
round's ratio of median trial durations (on / off); the sampler thread's own CPU, read on the workers, is the
direct cost beside it. Target: <= 1%. Run: ``.venv/bin/python bench/bench_utilization.py``.
"""

from __future__ import annotations

import _runner
from _common import median
from _runner import CLUSTER, constants, interleave, local_cluster, measuring, timed
from _workloads import busy

TRIAL_S = 2.0
TRIALS = 8
ROUNDS = 12  # rounds of ~9 s: a round-to-round spread of a few percent needs a dozen to judge 1%
TARGET_OVERHEAD_PCT = 1.0


def calibrate() -> int:
    n = 200_000
    while (dt := timed(busy, n, 0.5)[1]) <= 0.2:
        n *= 4
    return int(n * TRIAL_S / dt)


def _switch(on: bool) -> None:
    import dask.config

    dask.config.set({"jupyter_dist.utilization": on})


def _sampler_cpu() -> float:
    from jupyter_dist.trials._utilization import _sampler

    return _sampler._own_cpu


def run_side(client, n: int, on: bool, warm_up: bool = False) -> dict:
    from jupyter_dist import space

    client.run(_switch, on)
    before = sum(client.run(_sampler_cpu).values())
    exp, wall = _runner.hpo(
        busy,
        {"n": n, "x": space.uniform(0, 1e-9)},
        client,
        trials=TRIALS,
        parallel=2,
        metric="s",
        store=False,
    )
    records = exp.trial_records()
    assert all(rec.state == "completed" for rec in records), [(r.state, r.error) for r in records]
    durations = [rec.duration for rec in records]
    sampler = sum(client.run(_sampler_cpu).values()) - before
    samples = len(exp.utilization)
    assert warm_up or (samples > 0) == on, samples  # a warm-up's brief trials may end unsampled
    return {
        "wall_s": wall,
        "trial_s": durations,
        "median_trial_s": median(durations),
        "samples": samples,
        "sampler_cpu_s": sampler,
        "sampler_cpu_pct_of_trial_time": 100 * sampler / sum(durations),
    }


def main() -> dict:
    parameters = constants(
        "TRIAL_S",
        "TRIALS",
        "ROUNDS",
        n=None,
        function="busy(n, x): s += (0.5 + x) * i for i in range(n); pure Python, calibrated to ~TRIAL_S here",
        cluster=CLUSTER,
        call="hpo(busy, {'n': n, 'x': space.uniform(0, 1e-9)}, trials=TRIALS, parallel=2, metric='s', "
        "sampler='random', store=False, progress=False)",
        on="dask config jupyter_dist.utilization: true on the workers (client.run(dask.config.set))",
        off="the same, false: no sampler registration, no samples",
        order="alternate: on, off; then off, on",
    )
    with measuring("utilization", parameters) as result:
        n = calibrate()
        result["parameters"]["n"] = n
        with local_cluster() as client:
            run_side(
                client, n // 4, True, warm_up=True
            )  # warm-up: imports, the sampler thread, the function's pickle
            sides = {"on": lambda r: run_side(client, n, True), "off": lambda r: run_side(client, n, False)}
            runs = interleave(ROUNDS, sides, order="alternate")
            client.run(_switch, True)
        ratios = [
            on["median_trial_s"] / off["median_trial_s"]
            for on, off in zip(runs["on"], runs["off"], strict=True)
        ]
        overhead = 100 * (median(ratios) - 1)
        sampler = median([run["sampler_cpu_pct_of_trial_time"] for run in runs["on"]])
        result.update(
            runs=runs,
            median_trial_s={side: median([r["median_trial_s"] for r in v]) for side, v in runs.items()},
            ratio_on_over_off_per_round=ratios,
            ratio_on_over_off=median(ratios),
            overhead_pct=overhead,
            sampler_cpu_pct_of_trial_time=sampler,
            samples_per_trial_second=median([r["samples"] / sum(r["trial_s"]) for r in runs["on"]]),
            target={"overhead_pct_at_most": TARGET_OVERHEAD_PCT, "judged_on": "median of per-round ratios"},
            met=overhead <= TARGET_OVERHEAD_PCT,
        )
    return result


if __name__ == "__main__":
    _runner.main("utilization", main, quick={"TRIAL_S": 1.2, "TRIALS": 2, "ROUNDS": 1})
