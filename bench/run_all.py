"""Run every benchmark (or those named: ``.venv/bin/python bench/run_all.py dispatch ddp``), each in a fresh
Python process (its own cluster, its training functions in ``__main__``, shipped by value), after waiting for the
machine to be quiet (a test suite skews timings); write bench/results/summary.json, with the latest figures of the
others as they are.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _common import RESULTS, header, machine_busy_share, write_result

HERE = Path(__file__).resolve().parent
TIMEOUT = 300  # seconds per benchmark; each is meant to take under ~2 minutes
# Longer for the benchmarks that need it: data_by_reference's pickled side sends 32 GB (~2.3 min a run, 2 rounds);
# samplers takes ~3 min, close to TIMEOUT when other work shares the machine.
TIMEOUTS = {"data_by_reference": 600, "samplers": 600}
QUIET_WAIT = 90.0  # seconds to wait, at most, for other processes to leave the CPU before each benchmark
QUIET_SHARE = 0.10  # "quiet": under this share of the machine's CPU busy


def _dispatch(r: dict) -> dict:
    def rates(side: str) -> dict:
        return {"best": r[side]["best_per_s"], "median": r[side]["median_per_s"]}

    return {
        "ours_trials_per_s": rates("ours"),
        "raw_dask_tasks_per_s": rates("raw_dask"),
        "ratio_ours_over_raw": r["ratio_ours_over_raw"],
        "optuna_in_memory_trials_per_s": r["optuna_in_memory_reference"]["median_per_s"],
    }


def _pruning(r: dict) -> dict:
    return {
        bench: {
            label: {
                "best_over_no_pruner": run["best_over_reference"],
                "step_share": run["step_share"],
                "pruned": run["counts"]["pruned"],
            }
            for label, run in r[bench]["runs"].items()
            if label != "none"
        }
        for bench in ("synthetic", "mlp")
    } | {"stop_latency_s": r["stop_latency_s"]["all"]}


def _keys(*keys: str) -> Callable[[dict], dict]:
    return lambda r: {key: r[key] for key in keys}


# The benchmarks run_all runs, in order, and the figures of each result file that summary.json keeps.
FIGURES: dict[str, Callable[[dict], dict]] = {
    "dispatch": _dispatch,
    "streaming": _keys("tight", "paced", "paced_pruner", "ratio_ours_over_raw"),
    "overhead": _keys(
        "median_s", "slowdown_pct", "slowdown_pct_paired_median", "ours_fixed_overhead_median_s", "spread_pct"
    ),
    "pruning": _pruning,
    "pareto": lambda r: {
        "grid": {key: r["grid"][key] for key in ("hv_ratio", "step_share")},
        "tpe": {key: r["tpe"][key] for key in ("hv_ratio_median", "step_share_median")},
    },
    "pbt": lambda r: (
        {
            bench: {key: r[bench][key] for key in ("margin_median", "margin_min", "wall_ratio_median")}
            for bench in ("toy", "digits")
        }
        | {"restart_s_per_segment": r["overhead"]["restart_s_per_segment_median"]}
    ),
    "warm_start": lambda r: {
        bench: {key: r[bench][key] for key in ("warm_over_cold_median", "warm_reached")}
        for bench in ("hartmann6", "digits")
    },
    "samplers": lambda r: {
        "regret_median": {
            name: d["regret_median"][str(r["single"]["budgets"][-1])]
            for name, d in r["single"]["samplers"].items()
        },
        "sampler_time_per_trial_s": {
            name: d["sampler_time_per_trial_s_median"] for name, d in r["single"]["samplers"].items()
        },
        "pruners": {
            label: {"regret": d["regret_median"], "step_share": d["step_share_median"]}
            for label, d in r["pruners"]["runs"].items()
        },
    },
    "elastic": lambda r: {
        k: {
            way: r["every"][k][way]["lost_s_median"]
            for way in ("elastic", "by_hand_checkpoint", "by_hand_zero")
        }
        for k in r["every"]
    },
    "ddp": _keys("median_samples_per_s", "scaling_2_over_1", "one_rank_over_plain_loop"),
    "data_by_reference": _keys("by_way", "ratios"),
}
BENCHMARKS = tuple(FIGURES)


def _shown(path: Path) -> str:
    """``path`` as summary.json names it: relative to bench/ (results/x.json) unless BENCH_RESULTS moved it."""
    return str(path.relative_to(HERE)) if path.is_relative_to(HERE) else str(path)


def _figures(name: str, path: Path) -> dict:
    """What summary.json keeps of a result file (a benchmark that only measures sets no target)."""
    result = json.loads(path.read_text())
    return {
        "timestamp": result["timestamp"],
        "target": result.get("target"),
        "met": result.get("met"),
        "figures": FIGURES[name](result),
        "cpu_contention": result.get("cpu_contention"),
    }


def wait_for_quiet() -> dict:
    t0 = time.monotonic()
    share = machine_busy_share(1.0)
    while share > QUIET_SHARE and time.monotonic() - t0 < QUIET_WAIT:
        print(f"  machine {share:.0%} busy with other work; waiting for it to settle...", flush=True)
        share = machine_busy_share(2.0)
    return {"waited_s": time.monotonic() - t0, "busy_share_at_start": share, "quiet": share <= QUIET_SHARE}


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")
        return 2
    names = names or list(BENCHMARKS)
    wall0 = time.perf_counter()
    summary = header("summary", {"benchmarks": names, "timeout_s": TIMEOUT})
    summary["results"] = {}
    failed = []
    for name in names:
        print(f"=== {name}", flush=True)
        quiet = wait_for_quiet()
        path = RESULTS / f"{name}.json"
        before = path.stat().st_mtime if path.exists() else None
        t0 = time.perf_counter()
        try:
            script = [sys.executable, str(HERE / f"bench_{name}.py")]
            rc = subprocess.run(script, timeout=TIMEOUTS.get(name, TIMEOUT), cwd=HERE.parent).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        elapsed = time.perf_counter() - t0
        fresh = path.exists() and path.stat().st_mtime != before
        entry = {
            "ran_now": True,
            "returncode": rc,
            "wall_s": elapsed,
            "before_start": quiet,
            "file": _shown(path),
        }
        if rc == 0 and fresh:
            entry.update(_figures(name, path))
        else:
            failed.append(name)
            entry["error"] = f"bench_{name}.py exited with {rc}" + ("" if fresh else "; no fresh result file")
        summary["results"][name] = entry
    for name in BENCHMARKS:  # not run this time: keep the figures of its latest result file, marked as such
        path = RESULTS / f"{name}.json"
        if name not in names and path.exists():
            summary["results"][name] = {"ran_now": False, "file": _shown(path), **_figures(name, path)}
    summary["failed"] = failed
    summary["wall_s"] = time.perf_counter() - wall0
    out = write_result("summary", summary)
    print(f"=== done in {summary['wall_s']:.0f} s; summary -> {out}")
    git = summary["git"]
    dirty = git["package_uncommitted_changes"]
    changes = f" with uncommitted changes in {', '.join(dirty)}" if dirty else ""
    print(f"  measured commit {git['commit']}{changes}")
    for name, entry in summary["results"].items():
        print(f"  {name:10} met: {json.dumps(entry.get('met', entry.get('error')))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
