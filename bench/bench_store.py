"""What recording into the experiment store costs: dispatch and streaming with the store on and off.

Same LocalCluster (2 worker processes x 1 thread), same run, interleaved (off, on, off, on, ...):
  * dispatch: bench_dispatch's 1000 no-op trials through ``hpo()`` (random sampler), REPEATS times per side;
  * streaming: bench_streaming's 2 trials calling ``report()`` in a tight loop for STREAM_S seconds, the live
    view's listener measuring delivery and latency, once per side per round.
"On" records into a fresh store file in a temporary directory (the default when nothing is configured is the
same code on a file in Jupyter's data directory); "off" is ``JUPYTER_DIST_STORE=off``. After each "on" run the
store's row counts are checked against what the run produced (nothing lost on the way to disk).

Targets (issue 11): the store costs <= 10% of either (medians), and streaming p50 stays < 50 ms.

Run: ``.venv/bin/python bench/bench_store.py [--rounds 3]`` (writes bench/results/store.json).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import bench_dispatch
import bench_streaming
from _common import CpuMonitor, contention_note, header, median, write_result

N = bench_dispatch.N
STREAM_S = 10.0
TIGHT = 0.0  # bench_streaming's rate for "as fast as report() lets it"
TARGET_COST = 0.10
TARGET_P50_S = 0.05


def _trials(path: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM trials").fetchone()[0]


def _reports(path: str) -> int:
    with sqlite3.connect(path) as conn:  # schema 3: reports lie in chunks, each row says how many it holds
        return conn.execute("SELECT coalesce(sum(count), 0) FROM report_chunks").fetchone()[0]


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
        out["stored_trials"] = _trials(path)
        out["stored_reports"] = _reports(path)
        out["store_bytes"] = sum(f.stat().st_size for f in Path(folder).glob(f"store-{round_no}.sqlite*"))
        # every dispatch trial, both streaming trials, and every report the streaming run sent
        assert out["stored_trials"] == N * bench_dispatch.REPEATS + bench_streaming.TRIALS, out
        assert out["stored_reports"] >= streaming["sent"], out
    return out


def main(rounds: int) -> dict:
    import jupyter_dist

    wall0 = time.perf_counter()
    cpu = CpuMonitor()
    client = jupyter_dist.get_client("local", n_workers=2, threads_per_worker=1)
    client.wait_for_workers(2)
    bench_dispatch.run_ours(client, bench_dispatch.WARMUP)
    saved = os.environ.get("JUPYTER_DIST_STORE")
    runs: dict[str, list[dict]] = {"off": [], "on": []}
    try:
        with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-store-") as folder:
            for r in range(rounds):
                for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    runs[side].append(run_side(client, side, folder, r))
                    last = runs[side][-1]
                    print(
                        f"  round {r} store {side:>3}: dispatch {median(last['dispatch_trials_per_s']):.0f} trials/s,"
                        f" streaming {last['streaming_delivered_per_s']:.0f} reports/s, p50 "
                        f"{last['streaming_p50_s'] * 1e3:.1f} ms, p99 {last['streaming_p99_s'] * 1e3:.0f} ms",
                        flush=True,
                    )
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_DIST_STORE", None)
        else:
            os.environ["JUPYTER_DIST_STORE"] = saved
        jupyter_dist.close_local_cluster()

    def med(side: str, key: str) -> float:
        values = [v for run in runs[side] for v in (run[key] if isinstance(run[key], list) else [run[key]])]
        return median(values)

    dispatch = {side: med(side, "dispatch_trials_per_s") for side in runs}
    streaming = {side: med(side, "streaming_delivered_per_s") for side in runs}
    p50 = {side: med(side, "streaming_p50_s") for side in runs}
    cost = {
        "dispatch": 1 - dispatch["on"] / dispatch["off"],
        "streaming": 1 - streaming["on"] / streaming["off"],
    }
    met = {
        "dispatch_cost": cost["dispatch"] <= TARGET_COST,
        "streaming_cost": cost["streaming"] <= TARGET_COST,
        "streaming_p50": p50["on"] < TARGET_P50_S,
    }
    result = header(
        "store",
        {
            "rounds": rounds,
            "dispatch": f"{N} no-op trials, random sampler, {bench_dispatch.REPEATS} repeats per side per round",
            "streaming": f"{bench_streaming.TRIALS} trials x {STREAM_S:.0f} s of report() in a tight loop, live "
            "view listener",
            "on": "JUPYTER_DIST_STORE=<fresh file in a temporary directory>",
            "off": "JUPYTER_DIST_STORE=off",
        },
    )
    result.update(
        runs=runs,
        median={
            "dispatch_trials_per_s": dispatch,
            "streaming_delivered_per_s": streaming,
            "streaming_p50_s": p50,
        },
        cost_of_the_store=cost,
        target={"cost_at_most": TARGET_COST, "streaming_p50_s_below": TARGET_P50_S},
        met=met,
        cpu_contention=cpu.stop(),
        wall_s=time.perf_counter() - wall0,
    )
    return result


def summary(result: dict) -> str:
    m, c = result["median"], result["cost_of_the_store"]
    d, s, p = m["dispatch_trials_per_s"], m["streaming_delivered_per_s"], m["streaming_p50_s"]
    return "\n".join(
        [
            f"store on vs off, {result['parameters']['rounds']} rounds interleaved (medians):",
            f"  dispatch: off {d['off']:.0f}, on {d['on']:.0f} trials/s -> the store costs {c['dispatch']:.1%}",
            f"  streaming: off {s['off']:.0f}, on {s['on']:.0f} reports/s -> {c['streaming']:.1%}; p50 off "
            f"{p['off'] * 1e3:.1f} ms, on {p['on'] * 1e3:.1f} ms",
            f"  met: {result['met']}",
            contention_note(result["cpu_contention"]),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    res = main(args.rounds)
    path = write_result("store", res)
    print(summary(res))
    print(f"  -> {path}")
