"""Scale past Ray Tune's largest run (issue 44): in one fresh process, one after the other, ``hpo()`` of 10,000 and
of 100,000 trials of 3 reports each (random sampler, ``pruner=None``, the store on, ``progress=False``, the embedded
cluster): trials/s of each, the kernel's RSS before, after and at its peak and its growth per finished trial, and
the live experiment's views timed at the end (``counts()``, ``trials``, ``history``); then, in this process, the
100k experiment read back (``load()`` + ``.trials``, ``.history`` per million rows) and from a real ``jupyter
server`` its REST listing, detail and last page of trials (bytes, seconds). Targets: the rate at 100k >= 0.95x the
rate at 10k, <= 1 KB of kernel memory per finished trial, ``load()`` + ``.trials`` < 1.5 s, ``.history`` <= 1 s per
million rows, the REST detail <= 200 KB. Run: ``.venv/bin/python bench/bench_scale_100k.py`` (~7 min on the busy
2-core machine; ``--quick``: 1,000 and 5,000 trials).
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
import urllib.request
from pathlib import Path

import _runner
from _common import jupyter_server, median
from _runner import CLUSTER, in_child, local_cluster, measuring, timed
from bench_scale import Sampler, _rss

SIZES = (10_000, 100_000)  # trials of the first and of the second hpo(), in that order
REPORTS = 3  # report() calls a trial
WARMUP = 200  # trials of an unmeasured hpo() first (store off): imports, the workers' first tasks
PARALLEL = 2
TARGET_RATE_RATIO = 0.95  # rate at the larger size / rate at the smaller
TARGET_BYTES_PER_TRIAL = 1024  # kernel RSS growth per finished trial
TARGET_LOAD_TRIALS_S = 1.5  # load() + .trials of the larger experiment
TARGET_HISTORY_S_PER_M = 1.0  # .history per million rows
TARGET_DETAIL_BYTES = 200_000  # the REST detail of the larger experiment
CHILD_TIMEOUT_S = 2400
READ_REPEATS = 3


# --- run on the workers -----------------------------------------------------------------------------------
def three_reports(x, reports):
    import jupyter_dist

    for i in range(reports):
        jupyter_dist.report(step=i, v=x * i)
    return {"v": x * reports}


# --- the runs, in a child process (the kernel) ------------------------------------------------------------
def _by_tenth(records, wall_start: float) -> list[dict]:
    """Trials/s over each tenth of the run's trials, by when each finished (started + duration, on the workers'
    clock, the same host's): a cost per trial that grows with the experiment shows as a falling rate."""
    ends = sorted(r.started + r.duration for r in records if r.duration is not None)
    if len(ends) < 20:
        return []
    out, at = [], wall_start
    for k in range(1, 11):
        end = ends[len(ends) * k // 10 - 1]
        n = len(ends) * k // 10 - len(ends) * (k - 1) // 10
        out.append(
            {"tenth": k, "trials": n, "seconds": end - at, "per_s": n / (end - at) if end > at else None}
        )
        at = end
    return out


def one_run(client, trials: int, store: str) -> tuple[object, dict]:
    from jupyter_dist import space

    gc.collect()
    rss_before = _rss()
    sampler = Sampler()
    sampler.start()
    cpu0 = time.process_time()
    t0 = time.time()
    search = {"trials": trials, "parallel": PARALLEL, "metric": "v", "pruner": None, "seed": 0}
    search |= {"name": f"scale-100k-{trials}", "store": store, "progress": False}
    exp, wall = _runner.hpo(three_reports, {"x": space.uniform(0, 1), "reports": REPORTS}, client, **search)
    cpu = time.process_time() - cpu0
    sampler.done.set()
    sampler.join()
    rss_after = _rss()
    gc.collect()  # the run's end handed back what its collector froze (trials/_collector.py)
    rss_after_gc = _rss()
    counts = exp.counts()
    done, reports = exp.done, exp.reports
    records = exp.trial_records()
    return exp, {
        "trials": trials,
        "experiment_id": exp.id,
        "wall_s": wall,
        "trials_per_s": done / wall,
        "counts": counts,
        "trials_done": done,
        "reports": reports,
        "nothing_lost_or_doubled": counts["completed"] == trials and reports == trials * REPORTS,
        "rate_by_tenth_of_trials": _by_tenth(records, t0),
        "kernel_cpu_s": cpu,
        "kernel_cpu_ms_per_trial": 1e3 * cpu / done,
        "kernel_thread_cpu_ms_per_trial": {n: 1e3 * s / done for n, s in sampler.thread_cpu_s().items()},
        "kernel_rss_mb": {
            "before": rss_before / 2**20,
            "peak": max(sampler.samples + [rss_before]) / 2**20,
            "after": rss_after / 2**20,
            "after_gc_collect": rss_after_gc / 2**20,
        },
        "kernel_rss_growth_bytes_per_finished_trial": (rss_after_gc - rss_before) / done,
        "kernel_rss_peak_growth_bytes_per_finished_trial": (max(sampler.samples + [rss_before]) - rss_before)
        / done,
    }


def live_views(exp) -> dict:
    """The finished run's views in the kernel that ran it, each timed once (what a notebook cell reads)."""
    out = {}
    for name, read in {
        "counts": exp.counts,
        "status_line": exp.status_line,
        "best": lambda: exp.best,
        "trials": lambda: exp.trials,
        "history": lambda: exp.history,
    }.items():
        value, seconds = timed(read)
        out[f"{name}_s"] = seconds
        if name in ("trials", "history"):
            out[f"{name}_rows"] = len(value)
    out["history_s_per_million_rows"] = out["history_s"] / out["history_rows"] * 1e6
    return out


def run_sizes(sizes: list[int], store: str) -> dict:
    """Every size's hpo() in this one process, one after the other, each experiment kept (as a notebook keeps
    ``exp = hpo(...)``), so each run's RSS growth is what it added."""
    with local_cluster(timeout=120) as client:
        _runner.hpo(
            three_reports, {"x": 0.5, "reports": REPORTS}, client, trials=WARMUP, metric="v", store=False
        )
        kept, runs = [], []
        for trials in sizes:
            exp, run = one_run(client, trials, store)
            kept.append(exp)
            runs.append(run)
        runs[-1]["live_views"] = live_views(kept[-1])
    return {"runs": runs}


# --- reading the larger experiment back, in the parent ----------------------------------------------------
def read_back(store: str, experiment_id: str) -> dict:
    import jupyter_dist

    loads = [timed(jupyter_dist.load, experiment_id, store=store)[1] for _ in range(READ_REPEATS)]
    both = [timed(lambda: jupyter_dist.load(experiment_id, store=store).trials) for _ in range(READ_REPEATS)]
    history = []
    for _ in range(2):
        exp = jupyter_dist.load(experiment_id, store=store)
        history.append(timed(lambda exp=exp: exp.history))
    rows = len(history[-1][0])
    history_s = median([s for _, s in history])
    return {
        "load_s": median(loads),
        "load_then_trials_s": median([s for _, s in both]),
        "load_then_trials_all_s": [s for _, s in both],
        "trials_rows": len(both[-1][0]),
        "history_s": history_s,
        "history_rows": rows,
        "history_s_per_million_rows": history_s / rows * 1e6,
    }


def _get(url: str, token: str) -> tuple[int, float]:
    """A GET's body size in bytes and its seconds."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as answer:
        size = len(answer.read())
    return size, time.perf_counter() - t0


def read_over_http(store: str, experiment_id: str, folder: str, trials: int) -> dict:
    """The REST listing, the experiment's detail and its last page of trials best first, as the Experiments panel
    asks for them."""
    with jupyter_server("jupyter_server", folder, store) as (server, token):
        base = f"{server}/jupyter-dist/api/experiments"
        listing = [_get(base, token) for _ in range(READ_REPEATS)]
        detail = [_get(f"{base}/{experiment_id}", token) for _ in range(READ_REPEATS)]
        last = f"{base}/{experiment_id}/trials?offset={max(0, trials - 200)}&limit=200&sort=best"
        page = [_get(last, token) for _ in range(READ_REPEATS)]
    return {
        "last_page_bytes": page[-1][0],
        "last_page_s": median([s for _, s in page]),
        "listing_bytes": listing[-1][0],
        "listing_s": median([s for _, s in listing]),
        "detail_bytes": detail[-1][0],
        "detail_s": median([s for _, s in detail]),
        "detail_bytes_per_trial": detail[-1][0] / trials,
    }


def main(child: str | None, store: str | None, sizes: str | None) -> dict | None:
    if child:  # the child process: every run, one after the other
        return _runner.child_main(run_sizes([int(n) for n in sizes.split(",")], store))
    small, large = SIZES
    parameters = {
        "sizes": list(SIZES),
        "reports_per_trial": REPORTS,
        "parallel": PARALLEL,
        "warmup_trials": WARMUP,
        "cluster": CLUSTER,
        "run": f"hpo(three_reports, {{'x': space.uniform(0, 1), 'reports': {REPORTS}}}, trials=N, parallel="
        f"{PARALLEL}, metric='v', sampler='random', pruner=None, seed=0, store=<fresh file>, progress=False); "
        "both sizes in one fresh process, one after the other, each experiment kept; after a warm-up hpo() of "
        f"{WARMUP} trials, store off",
        "memory": "the kernel process's RSS (/proc/self/statm) before and after each hpo() call (after a "
        "gc.collect()), sampled every 50 ms for the peak; growth per finished trial = (after - before) / done",
        "read_back": f"in the parent process: load(id) + .trials, median of {READ_REPEATS}, each a fresh load; "
        ".history on a fresh load, median of 2; a real jupyter server's listing and detail, median of "
        f"{READ_REPEATS}",
    }
    with (
        measuring("scale_100k", parameters) as result,
        tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-scale-100k-") as folder,
    ):
        store = os.path.join(folder, "experiments.sqlite")
        print(f"  {small:,} then {large:,} trials x {REPORTS} reports, in one process...", flush=True)
        ran = in_child(["--child", "runs", "--store", store, "--sizes", f"{small},{large}"], CHILD_TIMEOUT_S)
        first, second = ran["runs"]
        print(f"  reading the {large:,}-trial experiment back...", flush=True)
        reading = read_back(store, second["experiment_id"])
        http = read_over_http(store, second["experiment_id"], folder, large)
        store_mb = sum(f.stat().st_size for f in Path(folder).glob("experiments.sqlite*")) / 2**20
        rate_ratio = second["trials_per_s"] / first["trials_per_s"]
        per_trial = second["kernel_rss_growth_bytes_per_finished_trial"]
        result.update(
            runs={str(run["trials"]): run for run in ran["runs"]},
            rate_ratio_large_over_small=rate_ratio,
            kernel_bytes_per_finished_trial=per_trial,
            read_back=reading,
            http=http,
            store_mb=store_mb,
            target={
                "rate_ratio_at_least": TARGET_RATE_RATIO,
                "kernel_bytes_per_finished_trial_at_most": TARGET_BYTES_PER_TRIAL,
                "load_then_trials_s_below": TARGET_LOAD_TRIALS_S,
                "history_s_per_million_rows_at_most": TARGET_HISTORY_S_PER_M,
                "rest_detail_bytes_at_most": TARGET_DETAIL_BYTES,
            },
            met={
                "rate_ratio": rate_ratio >= TARGET_RATE_RATIO,
                "kernel_bytes_per_finished_trial": per_trial <= TARGET_BYTES_PER_TRIAL,
                "load_then_trials": reading["load_then_trials_s"] < TARGET_LOAD_TRIALS_S,
                "history_per_million_rows": reading["history_s_per_million_rows"] <= TARGET_HISTORY_S_PER_M,
                "rest_detail_bytes": http["detail_bytes"] <= TARGET_DETAIL_BYTES,
                "nothing_lost_or_doubled": first["nothing_lost_or_doubled"]
                and second["nothing_lost_or_doubled"],
            },
        )
        result["all_met"] = all(result["met"].values())
    return result


if __name__ == "__main__":
    quick = {"SIZES": (1_000, 5_000), "WARMUP": 50}
    _runner.main("scale_100k", main, quick=quick, child=("child", "store", "sizes"))  # --child: the runs
