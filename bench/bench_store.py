"""What recording into the store costs: bench_dispatch's and bench_streaming's tight-loop runs with the store on
and off, interleaved. Targets: <= 10% of either, streaming p50 < 50 ms. Method: docs/performance/streaming.md.
Run: ``.venv/bin/python bench/bench_store.py [--rounds 3]``.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from unittest.mock import patch

import _runner
import bench_dispatch
import bench_streaming
from _common import median
from _runner import interleave, local_cluster, measuring

N = bench_dispatch.N
STREAM_S = 10.0
TIGHT = 0.0  # bench_streaming's rate for "as fast as report() lets it"
TARGET_COST = 0.10
TARGET_P50_S = 0.05


def _count(path: str, sql: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchone()[0]


def run_side(client, side: str, folder: str, round_no: int) -> dict:
    path = os.path.join(folder, f"store-{round_no}.sqlite")
    os.environ["JUPYTER_DIST_STORE"] = path if side == "on" else "off"
    dispatch = [bench_dispatch.run_ours(client, N)[0] for _ in range(bench_dispatch.REPEATS)]
    streaming = bench_streaming.run_ours(client, STREAM_S, TIGHT)
    out = {
        "dispatch_s": dispatch,
        "dispatch_trials_per_s": [N / s for s in dispatch],
        "streaming_delivered_per_s": streaming["delivered_per_s"],
        "streaming_p50_s": streaming["latency_s"]["p50"],
        "streaming_p99_s": streaming["latency_s"]["p99"],
        "streaming_sent": streaming["sent"],
        "streaming_lost": streaming["lost"],
    }
    if side == "on":
        out["stored_trials"] = _count(path, "SELECT count(*) FROM trials")
        # schema 3: reports lie in chunks, each row says how many it holds
        out["stored_reports"] = _count(path, "SELECT coalesce(sum(count), 0) FROM report_chunks")
        out["store_bytes"] = sum(f.stat().st_size for f in Path(folder).glob(f"store-{round_no}.sqlite*"))
        # every dispatch trial, both streaming trials, and every report the streaming run sent
        assert out["stored_trials"] == N * bench_dispatch.REPEATS + bench_streaming.TRIALS, out
        assert out["stored_reports"] >= streaming["sent"], out
    return out


def main(rounds: int) -> dict:
    parameters = {
        "rounds": rounds,
        "dispatch": f"{N} no-op trials, random sampler, {bench_dispatch.REPEATS} repeats per side per round",
        "streaming": f"{bench_streaming.TRIALS} trials x {STREAM_S:.0f} s of report() in a tight loop, live "
        "view listener",
        "on": "JUPYTER_DIST_STORE=<fresh file in a temporary directory>",
        "off": "JUPYTER_DIST_STORE=off",
    }
    with measuring("store", parameters) as result:
        with (
            patch.dict(os.environ),  # run_side sets JUPYTER_DIST_STORE: as it was afterwards
            local_cluster() as client,
            tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-store-") as folder,
        ):
            bench_dispatch.run_ours(client, bench_dispatch.WARMUP)
            sides = {side: lambda r, side=side: run_side(client, side, folder, r) for side in ("off", "on")}
            runs = interleave(rounds, sides, order="alternate")

        def med(side: str, key: str) -> float:
            """The median over the rounds (and over each round's repeats, where a run has a list)."""
            return median(
                [v for run in runs[side] for v in (run[key] if isinstance(run[key], list) else [run[key]])]
            )

        keys = ("dispatch_trials_per_s", "streaming_delivered_per_s", "streaming_p50_s")
        medians = {key: {side: med(side, key) for side in runs} for key in keys}
        dispatch, streaming, p50 = (medians[key] for key in keys)
        cost = {
            "dispatch": 1 - dispatch["on"] / dispatch["off"],
            "streaming": 1 - streaming["on"] / streaming["off"],
        }
        result.update(
            runs=runs,
            median=medians,
            cost_of_the_store=cost,
            target={"cost_at_most": TARGET_COST, "streaming_p50_s_below": TARGET_P50_S},
            met={
                "dispatch_cost": cost["dispatch"] <= TARGET_COST,
                "streaming_cost": cost["streaming"] <= TARGET_COST,
                "streaming_p50": p50["on"] < TARGET_P50_S,
            },
        )
    return result


if __name__ == "__main__":
    _runner.main("store", main, {"rounds": 3}, quick={"N": 100, "STREAM_S": 2.0})
