"""Streaming: reports/s delivered to the kernel and report()->handler latency, with the live widget drawing.

Two trials (parallel=2) each call ``jupyter_dist.report(step=i, v=float(i))`` in a tight loop for SECONDS. A
report listener registered on the Experiment (``exp.add_report_listener``) records ``time.time() - sent_at`` in
the kernel, where ``sent_at`` is the worker's ``time.time()`` inside ``report()`` (same host, same clock). The
view passed as ``progress=`` also wraps the real ``LiveView``, so its throttled redraws (5 Hz) run on the main
thread during the measurement. Each trial returns how many reports it sent; these are compared with what
arrived (``len(exp.history)`` and the listener's count).

With no pruner the kernel decides nothing on the reports (they feed the view and the store), so a report may wait
up to 0.2 s on the worker for others to travel with (runtime/_outbox.py); a third run, paced, passes a
pruner that never prunes (Optuna's MedianPruner waiting for 1,000 trials, asked at every report) to measure the
path where each report leaves within 5 ms.

Baseline, on the same cluster in the same run: two raw Dask tasks doing ``get_worker().log_event(topic, msg)``
in the same loop, one event per report (no batching), received by ``client.subscribe_topic``.

Run: ``.venv/bin/python bench/bench_streaming.py`` (writes bench/results/streaming.json).
"""

from __future__ import annotations

import gc
import time

from _common import CpuMonitor, contention_note, header, median, percentile, write_result
from _workloads import raw_stream, stream

SECONDS = 10.0
WARMUP_SECONDS = 1.0
# Secondary run: the same, but each trial paced at PACED_RATE reports/s (2 x 2,500 = the 5,000/s target), to
# measure latency at the target throughput without the backlog a saturating tight loop builds up.
PACED_RATE = 2500.0
SETTLE_S = 2.0  # pause before each measured run
TRIALS = 2
N_WORKERS = 2
THREADS_PER_WORKER = 1
DRAIN_TIMEOUT = 30.0  # raw baseline: how long to wait for the last messages after the tasks end
TARGET_REPORTS_PER_S = 5000.0
TARGET_P50_S = 0.050


class Recorder:
    """Arrival time and latency of every message the kernel-side handler sees (called on the IO thread)."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.sent_at: list[float] = []

    def record(self, sent_at: float) -> None:
        now = time.time()
        self.arrived.append(now)
        self.sent_at.append(sent_at)

    def stats(self, sent: int, run_s: float) -> dict:
        n = len(self.arrived)
        lat = [a - s for a, s in zip(self.arrived, self.sent_at, strict=True)]
        span = (max(self.arrived) - min(self.sent_at)) if n else 0.0
        # Latency per second of the run (by send time): a growing backlog shows as rising latency.
        by_second: dict[int, list[float]] = {}
        t0 = min(self.sent_at) if n else 0.0
        for s, latency in zip(self.sent_at, lat, strict=True):
            by_second.setdefault(int(s - t0), []).append(latency)
        return {
            "sent": sent,
            "received": n,
            "lost": sent - n,
            "run_s": run_s,
            "first_send_to_last_arrival_s": span,
            "sent_per_s": sent / run_s if run_s else None,
            "delivered_per_s": n / span if span else None,
            "latency_s": {
                "p50": percentile(lat, 50),
                "p90": percentile(lat, 90),
                "p99": percentile(lat, 99),
                "max": max(lat) if lat else None,
                "mean": sum(lat) / n if n else None,
            },
            "latency_by_second_of_run": [
                {
                    "second": sec,
                    "messages": len(v),
                    "p50_s": percentile(v, 50),
                    "p99_s": percentile(v, 99),
                }
                for sec, v in sorted(by_second.items())
            ],
        }


class MeasuringView:
    """progress= view: registers the latency listener and delegates drawing to the real LiveView."""

    def __init__(self, exp) -> None:
        from jupyter_dist.widgets._live import LiveView

        self.exp = exp
        self.recorder = Recorder()
        self.live = LiveView(exp)
        self.draws: list[float] = []
        self.idles = 0
        draw = self.live.draw

        def timed_draw() -> None:
            t0 = time.perf_counter()
            draw()
            self.draws.append(time.perf_counter() - t0)

        self.live.draw = timed_draw  # the throttle in ExperimentView.idle() calls self.draw()

    def start(self) -> None:
        self.exp.add_report_listener(self._on_report)
        self.live.start()

    def _on_report(self, trial_id, reports) -> None:
        for _, _, sent_at in reports:
            self.recorder.record(sent_at)

    def idle(self) -> None:
        self.idles += 1
        self.live.idle()

    def finish(self) -> None:
        self.live.finish()


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
    import jupyter_dist
    from jupyter_dist import space

    views: list[MeasuringView] = []

    def make_view(exp):
        views.append(MeasuringView(exp))
        return views[-1]

    t0 = time.perf_counter()
    exp = jupyter_dist.hpo(
        stream,
        {"seconds": seconds, "rate": rate, "x": space.uniform(0, 1)},
        trials=TRIALS,
        parallel=TRIALS,
        metric="v",
        sampler="random",
        pruner=pruner,  # how fast stops follow decisions has its own benchmark (bench_pruning)
        seed=0,
        cluster=client,
        progress=make_view,
    )
    wall = time.perf_counter() - t0
    view = views[0]
    trials = exp.trials
    assert (trials["state"] == "completed").all(), trials
    sent = int(trials["value"].sum())  # each trial returns {"v": n_sent, "sent": n_sent}
    history_rows = len(exp.history)
    out = view.recorder.stats(sent, float(trials["duration"].max()))
    out.update(
        {
            "hpo_wall_s": wall,
            "sent_per_trial": [int(v) for v in trials["value"]],
            "steps_per_trial": [int(v) for v in trials["steps"]],  # report() calls the workers counted
            "history_rows": history_rows,
            "lost_in_history": sent - history_rows,
            "widget": {
                "draws": len(view.draws),
                "draws_per_s": len(view.draws) / wall,
                "draw_s_median": median(view.draws) if view.draws else None,
                "draw_s_max": max(view.draws) if view.draws else None,
                "draw_s_total": sum(view.draws),
                "idle_calls": view.idles,
            },
        }
    )
    return out


def run_raw(client, seconds: float, rate: float, tag: str) -> dict:
    recorder = Recorder()
    topic = f"bench-streaming-raw-{tag}-{time.time_ns()}"

    def handler(event) -> None:
        recorder.record(event[1]["w"])

    client.subscribe_topic(topic, handler)
    try:
        futures = [client.submit(raw_stream, seconds, rate, topic, i, pure=False) for i in range(TRIALS)]
        t0 = time.perf_counter()
        counts = client.gather(futures)
        wall = time.perf_counter() - t0
        sent = sum(counts)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while len(recorder.arrived) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.unsubscribe_topic(topic)
    out = recorder.stats(sent, seconds)
    out.update({"tasks_wall_s": wall, "sent_per_task": counts})
    return out


def _brief(run: dict) -> dict:
    return {
        "delivered_per_s": run["delivered_per_s"],
        "sent_per_s": run["sent_per_s"],
        "p50_s": run["latency_s"]["p50"],
        "p99_s": run["latency_s"]["p99"],
        "lost": run["lost"],
    }


def main() -> dict:
    import jupyter_dist

    wall0 = time.perf_counter()
    cpu = CpuMonitor()
    client = jupyter_dist.get_client("local", n_workers=N_WORKERS, threads_per_worker=THREADS_PER_WORKER)
    try:
        client.wait_for_workers(N_WORKERS, timeout=60)
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
    finally:
        jupyter_dist.close_local_cluster()
    cpu_contention = cpu.stop()

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
    result = header(
        "streaming",
        {
            "seconds_per_trial": SECONDS,
            "trials": TRIALS,
            "parallel": TRIALS,
            "warmup_seconds": WARMUP_SECONDS,
            "paced_rate_per_trial": PACED_RATE,
            "cluster": f"jupyter_dist.get_client('local', n_workers={N_WORKERS}, threads_per_worker={THREADS_PER_WORKER})",
            "ours": "hpo(stream, {'seconds': 10.0, 'rate': R, 'x': space.uniform(0, 1)}, trials=2, parallel=2, "
            "metric='v', progress=<view wrapping LiveView + report listener>); stream() calls "
            "report(step=i, v=float(i)) in a loop, R=0: as fast as it can (tight), else paced at R/s per trial",
            "raw": "2 tasks calling get_worker().log_event(topic, msg) in the same loop; client.subscribe_topic",
            "latency": "time.time() in the kernel-side handler minus the worker's time.time() at send",
            "delivered_per_s": "messages received / (first send .. last arrival)",
            "paced_pruner": "ours, paced, with optuna.pruners.MedianPruner(n_startup_trials=1000): asked at every "
            "report, never prunes",
            "order": "warm-up (1 s each), paced raw, paced ours, paced ours with a pruner, tight raw, tight ours; "
            "gc.collect() and a "
            f"{SETTLE_S:.0f} s pause before each",
        },
    )
    result.update(
        {
            "runs": runs,
            "tight": {"raw_log_event": _brief(runs["tight"]["raw"]), "ours": _brief(tight)},
            "paced": {"raw_log_event": _brief(runs["paced"]["raw"]), "ours": _brief(paced)},
            "paced_pruner": {"ours": _brief(runs["paced_pruner"]["ours"])},
            "ratio_ours_over_raw": {
                mode: {
                    "delivered_per_s": runs[mode]["ours"]["delivered_per_s"]
                    / runs[mode]["raw"]["delivered_per_s"],
                    "p50_latency": runs[mode]["ours"]["latency_s"]["p50"]
                    / runs[mode]["raw"]["latency_s"]["p50"],
                }
                for mode in ("paced", "tight")
            },
            "target": {
                "reports_per_s": TARGET_REPORTS_PER_S,
                "p50_latency_s_below": TARGET_P50_S,
                "judged_on": "tight_loop is the benchmark as specified (delivered/s = received / first send .. last "
                "arrival); paced_at_target_rate offers 5,000/s (met when all of it arrives) and is given for the "
                "latency at the target throughput",
            },
            "met": met,
            "cpu_contention": cpu_contention,
            "wall_s": time.perf_counter() - wall0,
        }
    )
    return result


def summary(result: dict) -> str:
    lines = [
        f"streaming, {result['parameters']['trials']} trials x {result['parameters']['seconds_per_trial']:.0f} s "
        "of report() (tight loop; paced at 2 x 2,500/s):",
        f"  {'':30}{'sent/s':>9}{'delivered/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'lost':>7}",
    ]
    rows = [
        (f"{mode} {label}", result[mode][key])
        for mode in ("tight", "paced")
        for label, key in (("raw log_event", "raw_log_event"), ("jupyter_dist + widget", "ours"))
    ]
    rows.append(("paced, a pruner asked", result["paced_pruner"]["ours"]))
    for label, s in rows:
        lines.append(
            f"  {label:30}{s['sent_per_s']:9.0f}{s['delivered_per_s']:12.0f}"
            f"{s['p50_s'] * 1e3:9.1f}{s['p99_s'] * 1e3:9.1f}{s['lost']:7d}"
        )
    for mode in ("tight", "paced", "paced_pruner"):
        run = result["runs"][mode]["ours"]
        w = run["widget"]
        lines.append(
            f"  ours {mode}: sent {run['sent']}, listener got {run['received']}, history rows {run['history_rows']}, "
            f"hpo() {run['hpo_wall_s']:.1f} s, widget draws {w['draws']} ({w['draws_per_s']:.1f}/s, "
            f"median {w['draw_s_median'] * 1e3:.1f} ms)"
        )
    for mode, m in result["met"].items():
        lines.append(
            f"  {mode}: >= {result['target']['reports_per_s']:.0f} reports/s "
            f"{'met' if m['reports_per_s'] else 'NOT met'}; p50 < {result['target']['p50_latency_s_below'] * 1e3:.0f} ms "
            f"{'met' if m['p50_latency'] else 'NOT met'}"
        )
    lines.append(contention_note(result["cpu_contention"]))
    return "\n".join(lines)


if __name__ == "__main__":
    res = main()
    path = write_result("streaming", res)
    print(summary(res))
    print(f"  -> {path}")
