"""Scalability: issue 26's six shapes (``SHAPES``), Ray Tune's two published ones and no-op dispatch, each an
``hpo()`` of sleeping trials in a fresh process: efficiency = minimum / wall, reports counted, CPU by process and
thread. Method: docs/performance/scalability.md. Run: ``.venv/bin/python bench/bench_scalability.py`` (~20 min;
``--shapes 960x30s_10hz,dispatch`` picks; ``--scale 0.1`` or ``--quick`` shrinks them).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace

import _runner
from _common import CpuMonitor, CpuSampler, descendants
from _runner import ReportView, brief, child_main, in_child, local_cluster, measuring, sleepers

TARGET_EFFICIENCY = 0.95
TARGET_DISPATCH_RATIO = 0.8
WARMUP_TRIAL_S = 0.05
RAY_DOCS = "https://docs.ray.io/en/latest/tune/tutorials/tune-scalability.html"


@dataclass(frozen=True)
class Shape:
    what: str
    trials: int
    seconds: float
    rate: float  # reports per second per trial (see sleep_and_report: at least one per trial)
    parallel: int
    workers: int
    threads: int
    issue_0_4_wall_s: float | None = None  # issue 26's measurement of jupyter_dist 0.4
    ray_published: dict | None = None

    @property
    def minimum_s(self) -> float:
        return self.trials * self.seconds / self.parallel

    @property
    def reports_per_trial(self) -> int:
        return max(1, round(self.seconds * self.rate)) if self.rate else 0

    def scaled(self, factor: float) -> Shape:
        if factor >= 1:
            return self
        return replace(
            self,
            trials=min(self.trials, max(self.parallel, round(self.trials * factor))),
            seconds=self.seconds if self.seconds <= 1 else max(1.0, self.seconds * factor),
        )


def ray(shape: Shape, wall_s: float) -> Shape:
    """``shape`` as Ray's page published it: one node, a CPU per trial at once, ``wall_s``."""
    published = {
        "trials": shape.trials,
        "results_per_s_per_trial": shape.rate,
        "nodes": 1,
        "cpus": shape.parallel,
    }
    published |= {"trial_s": shape.seconds, "wall_s": wall_s, "minimum_s": shape.minimum_s}
    return replace(
        shape, ray_published=published | {"efficiency": shape.minimum_s / wall_s, "source": RAY_DOCS}
    )


SHAPES = {
    "1600x1s": Shape("1,600 trials x 1 s, 16 at a time", 1600, 1.0, 1, 16, 2, 8, 101.4),
    "96x30s_10hz": Shape("96 trials x 30 s x 10 reports/s, all at once", 96, 30.0, 10, 96, 2, 48, 30.5),
    "480x30s_10hz": Shape("480 trials x 30 s x 10 reports/s, all at once", 480, 30.0, 10, 480, 4, 120, 33.3),
    "960x30s_10hz": Shape("960 trials x 30 s x 10 reports/s, all at once", 960, 30.0, 10, 960, 8, 120, 54.0),
    "4000x0.1s": Shape("4,000 trials x 0.1 s, 32 at a time", 4000, 0.1, 10, 32, 2, 16, 16.4),
    "1000x1s_32procs": Shape(
        "1,000 trials x 1 s, 32 worker processes x 1 thread", 1000, 1.0, 1, 32, 32, 1, 35.4
    ),
    "ray_10000x1s": ray(
        Shape("Ray's bookkeeping overhead: 10,000 trials x 1 s, 16 at a time", 10000, 1.0, 1, 16, 2, 8),
        715.27,
    ),
    "ray_96x100s_10hz": ray(
        Shape(
            "Ray's result throughput: 96 trials x 100 s x 10 results/s, all at once", 96, 100.0, 10, 96, 2, 48
        ),
        168.94,
    ),
}
DISPATCH = "dispatch"
ORDER = [DISPATCH, "4000x0.1s", "1600x1s", "1000x1s_32procs", "96x30s_10hz", "480x30s_10hz", "960x30s_10hz"]
ORDER += ["ray_96x100s_10hz", "ray_10000x1s"]
DISPATCH_TRIALS = 1000
DISPATCH_REPEATS = 3


# --- one shape, in a child process --------------------------------------------------------------------------
def run_shape(name: str, scale: float) -> dict:
    shape = SHAPES[name].scaled(scale)
    t0 = time.perf_counter()
    with local_cluster(shape.workers, shape.threads, timeout=600) as client:
        cluster_start_s = time.perf_counter() - t0
        workers = descendants()  # the worker processes (and multiprocessing's resource tracker)
        _, warmup_s = sleepers(client, WARMUP_TRIAL_S, 1, shape.parallel, shape.parallel)
        sampler = CpuSampler({"workers": workers}, interval=1.0).start()
        contention = CpuMonitor()
        before = sampler.sample()
        exp, wall = sleepers(
            client, shape.seconds, shape.rate, shape.trials, shape.parallel, f"scalability-{name}"
        )
        after = sampler.sample()
        sampler.stop()
        cpu = sampler.window(before["t"], after["t"])
        cpu_contention = contention.stop(ours_cpu_s=cpu["process_s"] + cpu["groups_s"]["workers"])
        view = ReportView.last
        records = exp.trial_records()
        reports = exp.reports
    check = view.check(records)
    trials = len(records)
    durations = [r.duration for r in records if r.duration is not None]
    return {
        "shape": name,
        "what": shape.what,
        "sizes": dict(asdict(shape), reports_per_trial=shape.reports_per_trial, minimum_s=shape.minimum_s),
        "cluster": f"get_client('local', n_workers={shape.workers}, threads_per_worker={shape.threads})",
        "cluster_start_s": cluster_start_s,
        "warmup_s": warmup_s,
        "wall_s": wall,
        "minimum_s": shape.minimum_s,
        "efficiency": shape.minimum_s / wall,
        "counts": exp.counts(),
        "trials": trials,
        "reports_check": check,
        "exp_reports": reports,
        "latency_s": view.latency_s(),
        "trial_duration_s": {
            "nominal": shape.seconds,
            "mean": sum(durations) / len(durations) if durations else None,
            "max": max(durations, default=None),
        },
        "cpu_s": cpu,
        "kernel": _per(cpu["kernel_s"], trials, check["delivered"]),
        "io_loop": _per(cpu["threads_s"].get("io_loop", 0.0), trials, check["delivered"]),
        "main_thread": _per(cpu["threads_s"].get("main", 0.0), trials, check["delivered"]),
        "workers": _per(cpu["groups_s"]["workers"], trials, check["delivered"]),
        "cpu_contention": cpu_contention,
    }


def _per(cpu_s: float, trials: int, reports: int) -> dict:
    return {
        "cpu_s": cpu_s,
        "ms_per_trial": 1e3 * cpu_s / trials if trials else None,
        "ms_per_report": 1e3 * cpu_s / reports if reports else None,
    }


def run_dispatch(scale: float) -> dict:
    from bench_dispatch import measure

    n = DISPATCH_TRIALS if scale >= 1 else max(100, round(DISPATCH_TRIALS * scale))
    t0 = time.perf_counter()
    with local_cluster() as client:
        cluster_start_s = time.perf_counter() - t0
        sampler = CpuSampler({"workers": descendants()}, interval=1.0).start()
        contention = CpuMonitor()
        with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-scalability-") as folder:
            measured = measure(client, n, DISPATCH_REPEATS, store=os.path.join(folder, "experiments.sqlite"))
        sampler.stop()
        cpu = sampler.window()
        cpu_contention = contention.stop(ours_cpu_s=cpu["process_s"] + cpu["groups_s"]["workers"])
    return {
        "shape": DISPATCH,
        "what": f"{n} no-op trials through hpo() vs raw client.map of {n} no-op tasks, interleaved, "
        f"median of {DISPATCH_REPEATS}",
        "cluster": "get_client('local', n_workers=2, threads_per_worker=1)",
        "cluster_start_s": cluster_start_s,
        "trials": n,
        **measured,
        "efficiency": measured["ratio_ours_over_raw"]["median"],
        "cpu_s": cpu,
        "cpu_contention": cpu_contention,
    }


# --- the parent: each shape in a child process --------------------------------------------------------------
def _judge(res: dict) -> dict:
    if "error" in res:
        return {"target": None, "met": False}
    name = res["shape"]
    if name == DISPATCH:
        return {
            "target": f"ours/raw >= {TARGET_DISPATCH_RATIO}",
            "met": res["efficiency"] >= TARGET_DISPATCH_RATIO,
        }
    ray = SHAPES[name].ray_published
    exact = res["reports_check"]["every_trial_exact"] and res["counts"]["completed"] == res["trials"]
    if ray:
        return {
            "target": f"efficiency above Ray's {ray['efficiency']:.3f}, every report delivered once",
            "met": res["efficiency"] > ray["efficiency"] and exact,
        }
    return {
        "target": f"efficiency >= {TARGET_EFFICIENCY}, every report delivered once",
        "met": res["efficiency"] >= TARGET_EFFICIENCY and exact,
    }


def main(shapes: str | None, scale: float, child: str | None) -> dict | None:
    if not 0 < scale <= 1:
        raise SystemExit(f"--scale takes a factor in (0, 1], got {scale}")
    if child:  # one shape, in a child process
        return child_main(run_dispatch(scale) if child == DISPATCH else run_shape(child, scale))
    names = shapes.split(",") if shapes else ORDER
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(ORDER)}")
    parameters = {
        "shapes": names,
        "scale": scale,
        "run": "hpo(sleep_and_report, {'x': space.uniform(0, 1), 'seconds': S, 'rate': R}, trials=N, "
        "parallel=P, metric='v', sampler='random', pruner=None, seed=0, progress=ReportView, "
        "store=<fresh file>) on get_client('local', n_workers=W, threads_per_worker=T), one fresh process "
        "per shape, after a warm-up hpo() of P trials of 0.05 s",
        "minimum": "trials x trial seconds / parallel",
        "cpu": "user + system seconds from /proc during the hpo() call: the kernel process (by thread role) "
        "and its worker processes",
    }
    with measuring("scalability", parameters) as result:
        results = {}
        for name in names:
            print(f"  {name}...", flush=True)
            shape = SHAPES.get(name)
            timeout = 600 if shape is None else 3 * shape.scaled(scale).minimum_s + 600
            res = in_child(["--child", name, "--scale", str(scale)], timeout, label={"shape": name})
            res.update(_judge(res))
            results[name] = res
            print(brief(name, {k: res[k] for k in ("error", "stderr", "wall_s", "efficiency") if k in res}))
        result.update(
            shapes=results,
            efficiency={name: res.get("efficiency") for name, res in results.items()},
            met={name: res["met"] for name, res in results.items()},
            all_met=all(res["met"] for res in results.values()),
        )
    return result


if __name__ == "__main__":
    options = {
        "shapes": (None, f"comma-separated, of: {', '.join(ORDER)} (default: all, in that order)"),
        "scale": (1.0, "shrink trial counts and long trials (0 < F <= 1)"),
    }
    _runner.main("scalability", main, options, quick={"scale": 0.1}, child=("child",))  # --child: one shape
