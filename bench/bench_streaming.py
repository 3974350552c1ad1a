"""Streaming: 2 trials calling ``report()`` with the real ``LiveView`` drawing (paced, paced with a pruner, tight)
against one ``log_event`` per report: delivered/s, latency, lost. Target: >= 5,000/s, p50 < 50 ms. Method:
docs/performance/streaming.md. Run: ``.venv/bin/python bench/bench_streaming.py``.
"""

from __future__ import annotations

import functools
import gc
import time

import _runner
from _common import median
from _runner import CLUSTER, ReportView, local_cluster, measuring
from _workloads import raw_stream, stream

SECONDS = 10.0
WARMUP_SECONDS = 1.0
# Secondary run: the same, but each trial paced at PACED_RATE reports/s (2 x 2,500 = the 5,000/s target), to
# measure latency at the target throughput without the backlog a saturating tight loop builds up.
PACED_RATE = 2500.0
SETTLE_S = 2.0  # pause before each measured run
TRIALS = 2
DRAIN_TIMEOUT = 30.0  # raw baseline: how long to wait for the last messages after the tasks end
TARGET_REPORTS_PER_S = 5000.0
TARGET_P50_S = 0.050


def never_prunes():
    """A pruner the kernel asks at every report and that never says stop (too few trials to compare)."""
    import optuna

    return optuna.pruners.MedianPruner(n_startup_trials=1000)


def settle() -> None:
    gc.collect()
    time.sleep(SETTLE_S)


def run_ours(client, seconds: float, rate: float, pruner=None) -> dict:
    """``pruner``: None (the channel alone; reports may wait to travel together), or one the kernel asks at
    every report (each report then leaves within 5 ms)."""
    from jupyter_dist import space

    # How fast stops follow decisions has its own benchmark (bench_pruning).
    search = {"trials": TRIALS, "parallel": TRIALS, "metric": "v", "pruner": pruner, "seed": 0}
    search["progress"] = functools.partial(ReportView, live=True)
    exp, wall = _runner.hpo(
        stream, {"seconds": seconds, "rate": rate, "x": space.uniform(0, 1)}, client, **search
    )
    view = ReportView.last
    trials = exp.trials
    assert (trials["state"] == "completed").all(), trials
    sent = int(trials["value"].sum())  # each trial returns {"v": n_sent, "sent": n_sent}
    history_rows = len(exp.history)
    draws = view.draws
    return view.stats(sent, float(trials["duration"].max())) | {
        "hpo_wall_s": wall,
        "sent_per_trial": [int(v) for v in trials["value"]],
        "steps_per_trial": [int(v) for v in trials["steps"]],  # report() calls the workers counted
        "history_rows": history_rows,
        "lost_in_history": sent - history_rows,
        "widget": {
            "draws": len(draws),
            "draws_per_s": len(draws) / wall,
            "draw_s_median": median(draws) if draws else None,
            "draw_s_max": max(draws) if draws else None,
            "draw_s_total": sum(draws),
            "idle_calls": view.idles,
        },
    }


def run_raw(client, seconds: float, rate: float, tag: str) -> dict:
    recorder = ReportView(None)
    topic = f"bench-streaming-raw-{tag}-{time.time_ns()}"
    client.subscribe_topic(topic, lambda event: recorder.received_one(event[1]["w"]))
    try:
        futures = [client.submit(raw_stream, seconds, rate, topic, i, pure=False) for i in range(TRIALS)]
        counts, wall = _runner.timed(client.gather, futures)
        sent = sum(counts)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while len(recorder.latency) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.unsubscribe_topic(topic)
    return recorder.stats(sent, seconds) | {"tasks_wall_s": wall, "sent_per_task": counts}


CHANNEL = {"dispatch_trials": 300, "seconds": 3.0, "rate": 2500.0}
CHANNEL_PARAMETERS = {
    "dispatch_trials": CHANNEL["dispatch_trials"],
    "stream": f"2 trials x {CHANNEL['rate']:g} reports/s for {CHANNEL['seconds']:g} s",
}


def channel(client) -> dict:
    """One cluster's channel, as bench_gateway and bench_network compare clusters: bench_dispatch's no-op trials
    per second, then 2 trials streaming (``CHANNEL``) with a pruner asked at every report (each report leaves
    within 5 ms, so the latency is the network's, not the up-to-0.2 s wait of reports nobody decides on)."""
    import bench_dispatch

    elapsed, _ = bench_dispatch.run_ours(client, CHANNEL["dispatch_trials"])
    stream = _brief(run_ours(client, CHANNEL["seconds"], CHANNEL["rate"], never_prunes()))
    del stream["sent_per_s"]  # offered, not measured: the channel's figures are what arrived
    return {"dispatch_trials_per_s": CHANNEL["dispatch_trials"] / elapsed} | {
        f"stream_{key}": value for key, value in stream.items()
    }


def _brief(run: dict) -> dict:
    return {
        "delivered_per_s": run["delivered_per_s"],
        "sent_per_s": run["sent_per_s"],
        "p50_s": run["latency_s"]["p50"],
        "p99_s": run["latency_s"]["p99"],
        "lost": run["lost"],
    }


def main() -> dict:
    parameters = {
        "seconds_per_trial": SECONDS,
        "trials": TRIALS,
        "parallel": TRIALS,
        "warmup_seconds": WARMUP_SECONDS,
        "paced_rate_per_trial": PACED_RATE,
        "cluster": CLUSTER,
        "ours": "hpo(stream, {'seconds': 10.0, 'rate': R, 'x': space.uniform(0, 1)}, trials=2, parallel=2, "
        "metric='v', progress=<view wrapping LiveView + report listener>); stream() calls "
        "report(step=i, v=float(i)) in a loop, R=0: as fast as it can (tight), else paced at R/s per trial",
        "raw": "2 tasks calling get_worker().log_event(topic, msg) in the same loop; client.subscribe_topic",
        "latency": "time.time() in the kernel-side handler minus the worker's time.time() at send",
        "delivered_per_s": "messages received / (first send .. last arrival)",
        "paced_pruner": "ours, paced, with optuna.pruners.MedianPruner(n_startup_trials=1000): asked at every "
        "report, never prunes",
        "order": "warm-up (1 s each), paced raw, paced ours, paced ours with a pruner, tight raw, tight ours; "
        f"gc.collect() and a {SETTLE_S:.0f} s pause before each",
    }
    with measuring("streaming", parameters) as result:
        with local_cluster() as client:
            run_raw(client, WARMUP_SECONDS, 0, "warmup")
            run_ours(client, WARMUP_SECONDS, 0)
            # Paced first: a tight run leaves the cluster busy draining its backlog for a while afterwards, and
            # one paced run placed after it showed a 2.6 s stall in its first second.
            runs: dict[str, dict] = {"paced": {}, "paced_pruner": {}, "tight": {}}
            for mode, rate in (("paced", PACED_RATE), ("tight", 0)):
                settle()
                runs[mode]["raw"] = run_raw(client, SECONDS, rate, mode)
                settle()
                runs[mode]["ours"] = run_ours(client, SECONDS, rate)
                if mode == "paced":
                    settle()
                    runs["paced_pruner"]["ours"] = run_ours(client, SECONDS, rate, never_prunes())
        tight, paced = runs["tight"]["ours"], runs["paced"]["ours"]
        met = {
            "tight_loop": {
                "reports_per_s": tight["delivered_per_s"] >= TARGET_REPORTS_PER_S,
                "p50_latency": tight["latency_s"]["p50"] < TARGET_P50_S,
            },
            # 5,000/s offered: the rate is met when every report arrived (a late tail stall would otherwise count
            # against the span-based delivered/s); the throughput itself is what the tight loop measures.
            "paced_at_target_rate": {
                "reports_per_s": paced["lost"] == 0 and paced["sent_per_s"] >= 0.99 * TARGET_REPORTS_PER_S,
                "p50_latency": paced["latency_s"]["p50"] < TARGET_P50_S,
            },
        }
        for m in met.values():
            m["all"] = m["reports_per_s"] and m["p50_latency"]
        result.update(
            runs=runs,
            tight={"raw_log_event": _brief(runs["tight"]["raw"]), "ours": _brief(tight)},
            paced={"raw_log_event": _brief(runs["paced"]["raw"]), "ours": _brief(paced)},
            paced_pruner={"ours": _brief(runs["paced_pruner"]["ours"])},
            ratio_ours_over_raw={
                mode: {
                    "delivered_per_s": runs[mode]["ours"]["delivered_per_s"]
                    / runs[mode]["raw"]["delivered_per_s"],
                    "p50_latency": runs[mode]["ours"]["latency_s"]["p50"]
                    / runs[mode]["raw"]["latency_s"]["p50"],
                }
                for mode in ("paced", "tight")
            },
            target={
                "reports_per_s": TARGET_REPORTS_PER_S,
                "p50_latency_s_below": TARGET_P50_S,
                "judged_on": "tight_loop is the benchmark as specified (delivered/s = received / first send .. "
                "last arrival); paced_at_target_rate offers 5,000/s (met when all of it arrives) and is given for "
                "the latency at the target throughput",
            },
            met=met,
        )
    return result


if __name__ == "__main__":
    _runner.main("streaming", main, quick={"SECONDS": 2.0, "SETTLE_S": 0.5})
