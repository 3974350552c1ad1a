"""Scale: 10,000 trials x 100 reports, store on against off, each in a fresh process, then reading it back
(``load()``, ``.history``, the REST listing from a real ``jupyter server``). Targets: on <= 1.1x off, p99 < 50 ms,
load and listing < 1 s. Method: docs/performance/streaming.md, "A million reports". Run: ``.venv/bin/python
bench/bench_scale.py [--trials 10000 --steps 100 --rounds 1]``.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import _runner
from _common import get_json, jupyter_server, median, thread_cpu_s
from _runner import ReportView, in_child, interleave, local_cluster, measuring, timed

TRIALS = 10_000
STEPS = 100
TARGET_LOAD_S = 1.0
TARGET_LISTING_S = 1.0
TARGET_P99_S = 0.050
TARGET_WALL_RATIO = 1.1  # store on / store off
PAGE = 10_000  # the metrics endpoint's largest page
SIDE_TIMEOUT_S = 900


# --- run on the workers -----------------------------------------------------------------------------------
def scale_trial(x, steps):
    import jupyter_dist

    for step in range(steps):
        jupyter_dist.report(step=step, v=x * step)
    return {"v": x * steps}


# --- one side, in a child process -------------------------------------------------------------------------
def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Sampler(threading.Thread):
    """The kernel's RSS every 50 ms, and its threads' CPU seconds (by the name Python gives each) every 0.5 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True, name="bench-sampler")
        self.samples: list[int] = []
        self.done = threading.Event()
        self.cpu_before = {tid: cpu for tid, (_, cpu) in thread_cpu_s().items()}
        self.cpu, self.names = dict(self.cpu_before), {}

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.samples.append(_rss())
            if len(self.samples) % 10 == 0:
                self._cpu()

    def _cpu(self) -> None:
        self.names.update({t.native_id: t.name for t in threading.enumerate() if t.native_id})
        self.cpu.update({tid: cpu for tid, (_, cpu) in thread_cpu_s().items()})

    def thread_cpu_s(self) -> dict[str, float]:
        """CPU seconds per thread name since this sampler was made (a thread that ended loses its last 0.5 s)."""
        self._cpu()
        out: dict[str, float] = {}
        for tid, cpu in self.cpu.items():
            name = self.names.get(tid, "unnamed")
            out[name] = out.get(name, 0.0) + cpu - self.cpu_before.get(tid, 0.0)
        return {name: cpu for name, cpu in sorted(out.items(), key=lambda kv: -kv[1]) if cpu >= 0.01}


def run_side(side: str, store: str | None, trials: int, steps: int) -> dict:
    from jupyter_dist import space

    with local_cluster(timeout=None) as client:
        # Warm the workers (imports, first task) outside the measurement.
        _runner.hpo(
            scale_trial, {"x": 1.0, "steps": 3}, client, trials=4, metric="v", sampler="tpe", store=False
        )
        rss_before = _rss()
        sampler = Sampler()
        sampler.start()
        cpu0 = time.process_time()
        search = {"trials": trials, "parallel": 2, "metric": "v", "pruner": None, "seed": 0, "name": "scale"}
        search |= {"progress": ReportView, "store": store if store else False}
        exp, wall = _runner.hpo(scale_trial, {"x": space.uniform(0, 1), "steps": steps}, client, **search)
        cpu = time.process_time() - cpu0
        sampler.done.set()
        sampler.join()
        threads = sampler.thread_cpu_s()
        return {
            "side": side,
            "wall_s": wall,
            "trials_done": exp.done,
            "reports": exp.reports,
            "reports_per_s": exp.reports / wall,
            "kernel_cpu_s": cpu,
            "kernel_cpu_us_per_report": cpu / exp.reports * 1e6,
            "kernel_thread_cpu_us_per_report": {name: t / exp.reports * 1e6 for name, t in threads.items()},
            "latency_s": ReportView.last.latency_s(),
            "kernel_rss_mb": {
                "before": rss_before / 2**20,
                "peak": max(sampler.samples + [rss_before]) / 2**20,
                "after": _rss() / 2**20,
            },
            "experiment_id": exp.id,
        }


# --- reading it back, in the parent -----------------------------------------------------------------------
def _timed(fn, repeats: int = 3) -> tuple[float, object]:
    """The median seconds of ``repeats`` calls of ``fn`` and the last call's value."""
    runs = [timed(fn) for _ in range(repeats)]
    return median([seconds for _, seconds in runs]), runs[-1][0]


def read_back(store: str, experiment_id: str) -> dict:
    import jupyter_dist

    listing_s, listing = _timed(lambda: jupyter_dist.experiments(store=store))
    load_s, exp = _timed(lambda: jupyter_dist.load(experiment_id, store=store))
    best_s, _ = _timed(lambda: jupyter_dist.load(experiment_id, store=store).best)
    trials_s, trials = _timed(lambda: jupyter_dist.load(experiment_id, store=store).trials)
    history_s, history = _timed(lambda: jupyter_dist.load(experiment_id, store=store).history, repeats=1)
    return {
        "experiments_s": listing_s,
        "load_s": load_s,
        "load_then_best_s": best_s,
        "load_then_trials_s": trials_s,
        "load_then_history_s": history_s,
        "listed": len(listing),
        "trials_rows": len(trials),
        "history_rows": len(history),
    }


def read_over_http(store: str, experiment_id: str, folder: str) -> dict:
    with jupyter_server("jupyter_server", folder, store) as (server, token):
        base = f"{server}/jupyter-dist/api/experiments"
        listing_s, listing = _timed(lambda: get_json(base, token), repeats=5)
        one_s, one = _timed(lambda: get_json(f"{base}/{experiment_id}", token))
        t0, cursor, rows, pages, more = time.perf_counter(), 0, 0, 0, True
        while more:
            page = get_json(f"{base}/{experiment_id}/metrics?since={cursor}&limit={PAGE}", token)
            rows += len(page["rows"])
            cursor, more, pages = page["cursor"], page["more"], pages + 1
        paging_s = time.perf_counter() - t0
    return {
        "listing_s": listing_s,
        "listed": listing["total"],
        "experiment_s": one_s,
        "experiment_trials": len(one["trials"]),
        "metrics_pages": pages,
        "metrics_rows": rows,
        "metrics_all_pages_s": paging_s,
        "metrics_per_page_s": paging_s / pages,
    }


def _median_side(runs: list[dict]) -> dict:
    """One side's figures over its rounds: medians (the run nearest the median wall time for the rest)."""
    typical = sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2]
    medians = _runner.medians(runs, ("wall_s", "kernel_cpu_us_per_report"))
    return {
        **typical,
        **medians,
        "latency_s": _runner.medians(r["latency_s"] for r in runs),
        "rounds": len(runs),
    }


def main(trials: int, steps: int, rounds: int, side: str | None, store: str | None) -> dict | None:
    if side:  # a child process: one side
        return _runner.child_main(run_side(side, store, trials, steps))
    parameters = {
        "trials": trials,
        "steps": steps,
        "rounds": rounds,
        "cluster": "LocalCluster, 2 worker processes x 1 thread, one fresh process per side and round",
        "view": "listener only (latency), no widget",
    }
    with (
        measuring("scale", parameters) as result,
        tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-scale-") as folder,
    ):

        def one(r: int, side: str) -> dict:
            print(f"  round {r}: {trials:,} trials x {steps} steps, store {side}...", flush=True)
            store = ["--store", os.path.join(folder, f"experiments-{r}.sqlite")] if side == "on" else []
            return in_child(
                ["--side", side, "--trials", str(trials), "--steps", str(steps), *store], SIDE_TIMEOUT_S
            )

        sides = {side: lambda r, side=side: one(r, side) for side in ("on", "off")}
        runs = interleave(rounds, sides, "alternate")
        sides = {side: _median_side(side_runs) for side, side_runs in runs.items()}
        store = os.path.join(folder, "experiments-0.sqlite")
        experiment_id = runs["on"][0]["experiment_id"]
        reading = read_back(store, experiment_id)
        http = read_over_http(store, experiment_id, folder)
        store_mb = sum(f.stat().st_size for f in Path(folder).glob("experiments-0.sqlite*")) / 2**20
        on, off = sides["on"], sides["off"]
        wall_ratio = on["wall_s"] / off["wall_s"]
        result.update(
            sides=sides,
            runs=runs,
            store_mb=store_mb,
            store_bytes_per_report=store_mb * 2**20 / runs["on"][0]["reports"],
            read_back=reading,
            http=http,
            ratios_on_over_off={
                "kernel_rss_peak": on["kernel_rss_mb"]["peak"] / off["kernel_rss_mb"]["peak"],
                "latency_p99": on["latency_s"]["p99"] / off["latency_s"]["p99"],
                "wall": wall_ratio,
                "kernel_cpu": on["kernel_cpu_us_per_report"] / off["kernel_cpu_us_per_report"],
            },
            store_kernel_cpu_us_per_report=on["kernel_cpu_us_per_report"] - off["kernel_cpu_us_per_report"],
            target={
                "wall_on_over_off_at_most": TARGET_WALL_RATIO,
                "p99_s_below": TARGET_P99_S,
                "load_s_below": TARGET_LOAD_S,
                "listing_s_below": TARGET_LISTING_S,
            },
            met={
                "store_on_within_1_1x_of_off": wall_ratio <= TARGET_WALL_RATIO,
                "streaming_p99_below_50ms": on["latency_s"]["p99"] < TARGET_P99_S,
                "load_below_1s": reading["load_s"] < TARGET_LOAD_S,
                "rest_listing_below_1s": http["listing_s"] < TARGET_LISTING_S,
                "experiments_below_1s": reading["experiments_s"] < TARGET_LISTING_S,
                "metrics_paged_through": http["metrics_rows"] == runs["on"][0]["reports"],
            },
        )
    return result


if __name__ == "__main__":
    options = {"trials": TRIALS, "steps": STEPS, "rounds": (1, "on/off pairs, the order alternating")}
    _runner.main("scale", main, options, child=("side", "store"))  # a child process: one side
