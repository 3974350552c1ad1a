"""The performance pages' tables and plots, read from bench/results/*.json when the docs are built.

No figure on those pages is typed by hand: each comes from a result file through TABLES or PLOTS below.

    ```{bench-table} dispatch       a table of bench/results/dispatch.json: TABLES["dispatch"][...]
    :table: rates                   which one (default: the benchmark's first)
    :caption: Trials per second     (optional)
    ```

    ```{bench-plot} scalability     a plotly figure: PLOTS["scalability"][...]
    :plot: efficiency               which one (default: the benchmark's first)
    :caption: ...                   (optional)
    ```

    ```{bench-source} dispatch      when, at which commit, on what machine; its target and whether it was met
    ```

    ```{bench-overview}             a row per result file, linking its section (label "bench-<name>")
    ```

A table is a function of the result (the JSON as a dict) returning a header (or None) and rows of text. ``grid``,
``rows`` and ``pairs`` build one from paths into the JSON: "a.b.c"; "a.b?" where the key may be missing;
"a.b:ms" for an explicit unit, else the unit follows from the key names (``_s`` seconds, ``_ms``, ``_mb``,
``share``, ``_pct``, ``ratio``/``_over_``/``_vs_``...; see ``unit_of``). A path the JSON lacks is an error, which
fails a ``-W`` build: a renamed key cannot leave a page showing stale figures. The summary's figures are
bench/run_all.py's own FIGURES extractors.

Plots are plotly figures embedded as divs; plotly.min.js (the copy bundled with the plotly package, no CDN) is
copied into the build's _static and loaded only by pages that have a plot.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.fileutil import copy_asset_file

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "bench"))

from run_all import BENCHMARKS, FIGURES  # noqa: E402  (bench/ is no package: its scripts import as siblings)

Table = tuple[list[str] | None, list[list[str]]]
Keys = tuple[Any, ...]


def load(name: str) -> dict[str, Any]:
    path = RESULTS / f"{name}.json"
    return _read(path, path.stat().st_mtime_ns)


@functools.cache
def _read(path: Path, mtime_ns: int) -> dict[str, Any]:
    return json.loads(path.read_text())


def result_names() -> list[str]:
    return sorted(p.stem for p in RESULTS.glob("*.json"))


# --- formatting: a value, in the unit its path implies -------------------------------------------------------
def _sig(x: float) -> str:
    """3 significant digits; anything from 100 up without decimals, thousands separated."""
    if isinstance(x, int) or x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:#.3g}".rstrip(".")


def _unit_of_key(key: str) -> str | None:
    key = key.lower()
    rules: list[tuple[bool, str]] = [
        (key.endswith("per_s"), ""),  # a rate: a plain number, its unit in the label
        (key.startswith(("ratio", "scaling")) or "_over_" in key or "_vs_" in key, "x"),
        ("_pct" in key, "+pct" if "slowdown" in key else "pct"),
        ("share" in key, "%"),
        (key.endswith("_ms") or "_ms_" in key or key.startswith("ms_"), "ms"),
        (key.endswith("_us") or "_us_" in key, "us"),
        (key.endswith(("_s", "seconds")), "s"),
        (key.endswith("_mb") or "_mb_" in key, "MB"),
        (key.endswith("_gb"), "GB"),
        ("bytes" in key, "bytes"),
        (key.startswith("cost") or "overhead" in key, "%"),
    ]
    return next((unit for hit, unit in rules if hit), None)


def unit_of(path: Keys, value: Any = None) -> str | None:
    """The unit a value's path implies: the outermost key that names one ("slowdown_pct.ours_vs_direct": a
    percentage; "ratios.x.bytes_over_y": a ratio). An int is a count unless its own key names a unit."""
    units = [_unit_of_key(str(k)) for k in path]
    if isinstance(value, int) and not isinstance(value, bool) and (not units or units[-1] is None):
        return None
    return next((u for u in units if u is not None), None)


def fmt(value: Any, unit: str | None = None) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " · ".join(fmt(v, unit) for v in value)
    if isinstance(value, dict):
        return met_text(value)
    formats: dict[str | None, Callable[[float], str]] = {
        "s": lambda v: f"{_sig(v * 1000)} ms" if abs(v) < 1 else f"{_sig(v)} s",
        "ms": lambda v: f"{_sig(v)} ms",
        "us": lambda v: f"{_sig(v)} µs",
        "MB": lambda v: f"{_sig(v)} MB",
        "GB": lambda v: f"{_sig(v)} GB",
        "%": lambda v: f"{v * 100:.1f}%",
        "+%": lambda v: f"{v * 100:+.1f}%",
        "pct": lambda v: f"{v:.1f}%",
        "+pct": lambda v: f"{v:+.1f}%",
        "x": lambda v: f"{_sig(v)}×",
        "bytes": lambda v: f"{_sig(v / 1e9)} GB" if v >= 1e9 else f"{_sig(v / 1e6)} MB",
    }
    return formats.get(unit, _sig)(value)


def leaves(d: Any, prefix: Keys = ()) -> list[tuple[Keys, Any]]:
    if isinstance(d, dict):
        return [leaf for k, v in d.items() for leaf in leaves(v, (*prefix, k))]
    return [(prefix, d)]


def met_text(met: Any) -> str:
    """A result's ``met`` (a bool, or a dict of them): "yes", or "no" and what was missed."""
    if met is None:
        return "no target"
    missed = [" · ".join(map(str, path)) for path, ok in leaves(met) if not ok]
    if not missed:
        return "yes"
    named = [m for m in missed if m and not m.endswith("all")]
    return "no: " + ", ".join(named) if named else "no"


def humanize(path: Keys) -> str:
    """("ours_trials_per_s", "best") -> "ours trials/s · best": a JSON path as a label."""
    words = (" ".join(w for w in str(k).replace("_per_s", "/s").split("_") if w != "s") for k in path)
    return " · ".join(words)


# --- paths into a result ------------------------------------------------------------------------------------
class MissingKey(KeyError):
    def __str__(self) -> str:
        return f"no {'.'.join(map(str, self.args[0]))}"


def parse(spec: str) -> tuple[Keys, bool, str | None]:
    """ "a.b?:ms" -> (("a", "b"), optional, "ms")."""
    path, _, unit = spec.partition(":")
    return tuple(path.rstrip("?").split(".")), path.endswith("?"), unit or None


def get(r: Any, keys: Keys, optional: bool = False) -> Any:
    for key in keys:
        if r is None:
            return None
        try:
            r = r[int(key)] if isinstance(r, list) else r[key]
        except (KeyError, IndexError, ValueError, TypeError):
            if optional:
                return None
            raise MissingKey(keys) from None
    return r


def cell(r: Any, spec: str | Callable[[Any], str] | None, base: Keys = ()) -> str:
    """A cell's text: ``spec`` a path into ``r`` below ``base`` (a "{}" in it: ``base`` goes there instead), or
    a function of ``r`` at ``base`` returning the text; None: no such figure."""
    if spec is None:
        return "–"
    if callable(spec):
        return spec(get(r, base))
    keys, optional, unit = parse(spec)
    keys = tuple(k for p in keys for k in (base if p == "{}" else (p,))) if "{}" in keys else (*base, *keys)
    value = get(r, keys, optional)
    return fmt(value, unit or unit_of(keys, value))


# --- table builders: what each table takes from its JSON ---------------------------------------------------
def grid(r: dict, row_paths: dict[str, str | Keys], columns: dict[str, str | Callable[[Any], str]]) -> Table:
    """A row per ``row_paths`` entry (label: path into r), a column per ``columns`` entry (label: path into that
    row, or, with a "{}" standing for the row's path, into r: for JSON kept by figure, then by side)."""
    bases = {label: tuple(p.split(".")) if isinstance(p, str) else p for label, p in row_paths.items()}
    return ["", *columns], [
        [label, *(cell(r, c, base) for c in columns.values())] for label, base in bases.items()
    ]


def rows(r: dict, header: list[str], table: dict[str, tuple]) -> Table:
    """Rows whose cells each give their own path (or function of r): {label: (cell, cell, ...)}."""
    return ["", *header], [[label, *(cell(r, c) for c in cells)] for label, cells in table.items()]


def pairs(r: dict, table: dict[str, str | Callable[[Any], str]]) -> Table:
    """Label and value, no header."""
    return None, [[label, cell(r, spec)] for label, spec in table.items()]


def each(r: dict, path: str, skip: Iterable[str] = (), label: Callable[[str], str] = str) -> dict[str, Keys]:
    """A row per key of the dict at ``path``: {label(key): its path}."""
    base = tuple(path.split("."))
    return {label(k): (*base, k) for k in get(r, base) if k not in skip}


def summary_figures(_r: dict) -> Table:
    """run_all.py's FIGURES (what summary.json keeps of each benchmark) applied to each latest result file."""
    return ["benchmark", "figure", "value"], [
        [name, humanize(path), fmt(value, unit_of(path, value))]
        for name in BENCHMARKS
        for path, value in leaves(FIGURES[name](load(name)))
    ]


def _pruning_runs(bench: str) -> Callable[[dict], Table]:
    return lambda r: grid(
        r,
        each(r, f"{bench}.runs", label=lambda k: {"none": "no pruner"}.get(k, k)),
        {
            "best found": "best_value",
            "÷ no-pruner best": "best_over_reference:n",
            "its true rank": "rank_of_best",
            "steps used": "steps",
            "share of steps": "step_share",
            "pruned": "counts.pruned",
            "wall": "wall_s",
            "one at a time: share of steps": "sequential_replay_reference.step_share.median?",
        },
    )


def _saturation(r: dict) -> Table:
    """Trials at once that fill one core, by each process's user form (trials and reports alone)."""
    procs = r["model"]["by_process"]
    forms = {
        p: procs[p]["saturation"][procs[p]["user_form"]]["trials_at_once_by_rate_and_length"] for p in procs
    }
    return ["reports a second, trial length", *procs], [
        [shape, *(fmt(forms[p][shape]["trials_at_once"]) for p in procs)] for shape in forms["scheduler"]
    ]


def _held_out(r: dict) -> Table:
    out = []
    for point in r["held_out_check"]:
        for proc, p in point["processes"].items():
            user = p["by_form"][r["model"]["by_process"][proc]["user_form"]]
            out.append(
                [
                    point["label"],
                    proc,
                    fmt(p["measured_cores"]),
                    fmt(user["predicted_cores"]),
                    fmt(user["error_cores"]),
                    fmt(p["user_form_within_tolerance"]),
                ]
            )
    return ["point", "process", "measured cores", "predicted", "error", "within tolerance"], out


def _coefficients(r: dict) -> Table:
    """Each process's fit in trials and reports (its user form): CPU per trial, per report, idle; R²."""
    procs = r["model"]["by_process"]
    header = [
        "",
        "CPU a trial",
        "CPU a report",
        "idle (cores)",
        "R²",
        "R² counting events",
        "events fit better",
    ]
    out = []
    for proc, m in procs.items():
        fit = m["fits"][m["user_form"]]
        out.append(
            [
                proc,
                fmt(fit["coefficients"]["trials_per_s"], "s"),
                fmt(fit["coefficients"]["reports_per_s"], "s"),
                fmt(fit["coefficients"]["idle_cores"]),
                fmt(fit["r2"]),
                fmt(m["fits"]["per_trial_per_event"]["r2"]),
                fmt(m["events_explain_better_than_reports"]),
            ]
        )
    return header, out


def _when(timestamp: str) -> str:
    """ "2026-11-26T08:14:22+00:00" -> "2026-11-26 08:14 UTC"."""
    return timestamp[:16].replace("T", " ") + (" UTC" if timestamp.endswith("+00:00") else "")


def _runs_since(d: dict) -> str:
    """Whether a summary entry's result file has been rewritten (a later run of that benchmark) since."""
    return fmt(load(Path(d["file"]).stem)["timestamp"] != d["timestamp"])


# Labels the tables and the plots share.
STREAM_RUNS = {
    "tight loop, jupyter_dist": "tight.ours",
    "tight loop, raw log_event": "tight.raw_log_event",
    "paced, jupyter_dist": "paced.ours",
    "paced, raw log_event": "paced.raw_log_event",
    "paced, jupyter_dist with a pruner": "paced_pruner.ours",
}
STOP_SOURCES = {
    "synthetic": "synthetic curves (a report every 5 ms)",
    "mlp": "digits MLP (a report an epoch)",
    "threshold_5ms": "ThresholdPruner run (a report every 5 ms)",
}

# What each table takes from its result file: TABLES[benchmark][table] = function of the JSON -> Table.
TABLES: dict[str, dict[str, Callable[[dict], Table]]] = {
    "dispatch": {
        "rates": lambda r: rows(
            r,
            ["median trials/s", "best trials/s", "kernel CPU a trial"],
            {
                "jupyter_dist hpo()": (
                    "ours.median_per_s",
                    "ours.best_per_s",
                    "ours.kernel_cpu_ms_per_trial",
                ),
                "raw client.map": (
                    "raw_dask.median_per_s",
                    "raw_dask.best_per_s",
                    "raw_dask.kernel_cpu_ms_per_task",
                ),
                "Optuna's in-memory loop": (
                    "optuna_in_memory_reference.median_per_s",
                    "optuna_in_memory_reference.best_per_s",
                    None,
                ),
            },
        ),
        "ratio": lambda r: grid(
            r, {"hpo() ÷ raw client.map": "ratio_ours_over_raw"}, {"medians": "median", "best runs": "best"}
        ),
    },
    "overhead": {
        "times": lambda r: grid(
            r,
            {"median": "median_s", "fastest": "min_s", "spread (slowest ÷ fastest − 1)": "spread_pct"},
            {
                "direct call": "{}.direct",
                "client.submit().result()": "{}.raw_dask",
                "hpo(), 1 trial": "{}.ours",
            },
        ),
        "slowdown": lambda r: grid(
            r,
            {
                "hpo() against the direct call": "ours_vs_direct",
                "client.submit() against it": "raw_dask_vs_direct",
            },
            {
                "medians": "slowdown_pct.{}",
                "paired per repeat, median": "slowdown_pct_paired_median.{}",
                "fastest runs": "slowdown_pct_by_min.{}",
            },
        ),
        "fixed": lambda r: pairs(
            r,
            {
                "fixed cost around the function (median)": "ours_fixed_overhead_median_s",
                "the trial's own duration on the worker, against the direct call": (
                    "slowdown_pct.ours_worker_side_vs_direct"
                ),
            },
        ),
    },
    "trial_speed": {
        "ratio": lambda r: grid(
            r,
            {"digits MLP": "results.digits", "compute-bound MLP": "results.compute"},
            {
                "pool ÷ hpo(), median of the rounds": "ratio_pool_over_ours",
                "lowest round": lambda d: fmt(min(d["ratios_per_round"]), "x"),
                "highest round": lambda d: fmt(max(d["ratios_per_round"]), "x"),
                "ratio of the median walls": "ratio_of_median_walls",
                "target met": "met",
            },
        ),
        "time": lambda r: grid(
            r,
            {"digits MLP": "results.digits", "compute-bound MLP": "results.compute"},
            {
                "wall, hpo()": "median_wall_s.ours",
                "wall, pool": "median_wall_s.pool",
                "trials' durations, hpo()": "median_trial_seconds.ours",
                "trials' durations, pool": "median_trial_seconds.pool",
                "cores busy, hpo()": "median_busy_share.ours",
                "cores busy, pool": "median_busy_share.pool",
            },
        ),
    },
    "streaming": {
        "main": lambda r: grid(
            r,
            STREAM_RUNS,
            {
                "sent/s": "sent_per_s",
                "delivered/s": "delivered_per_s",
                "latency p50": "p50_s",
                "latency p99": "p99_s",
                "lost": "lost",
            },
        ),
    },
    "store": {
        "main": lambda r: rows(
            r,
            ["store off", "store on", "cost of the store"],
            {
                "dispatch, trials/s": (
                    "median.dispatch_trials_per_s.off",
                    "median.dispatch_trials_per_s.on",
                    "cost_of_the_store.dispatch",
                ),
                "streaming, reports/s delivered": (
                    "median.streaming_delivered_per_s.off",
                    "median.streaming_delivered_per_s.on",
                    "cost_of_the_store.streaming",
                ),
                "streaming, latency p50": ("median.streaming_p50_s.off", "median.streaming_p50_s.on", None),
            },
        ),
        "disk": lambda r: grid(
            r,
            {f"round {i + 1}": ("runs", "on", i) for i in range(len(r["runs"]["on"]))},
            {
                "reports sent": "streaming_sent",
                "reports stored": "stored_reports",
                "trials stored": "stored_trials",
                "store file": "store_bytes",
                "latency p99": "streaming_p99_s",
            },
        ),
    },
    "scale": {
        "run": lambda r: grid(
            r,
            {"store on": "sides.on", "store off": "sides.off"},
            {
                "wall": "wall_s",
                "reports/s": "reports_per_s",
                "delivery p50": "latency_s.p50",
                "delivery p99": "latency_s.p99",
                "kernel RSS peak": "kernel_rss_mb.peak",
                "kernel CPU a report": "kernel_cpu_us_per_report",
            },
        ),
        "ratios": lambda r: pairs(
            r,
            {
                "wall, store on ÷ off": "ratios_on_over_off.wall",
                "delivery p99, on ÷ off": "ratios_on_over_off.latency_p99",
                "kernel RSS peak, on ÷ off": "ratios_on_over_off.kernel_rss_peak",
                "kernel CPU, on ÷ off": "ratios_on_over_off.kernel_cpu",
                "the store's CPU in the kernel, a report": "store_kernel_cpu_us_per_report",
                "store file": "store_mb",
                "store file, bytes a report": "store_bytes_per_report:n",
            },
        ),
        "read": lambda r: rows(
            r,
            ["time", "rows"],
            {
                "experiments()": ("read_back.experiments_s", "read_back.listed"),
                "load()": ("read_back.load_s", None),
                "load(), then .best": ("read_back.load_then_best_s", None),
                "load(), then .trials": ("read_back.load_then_trials_s", "read_back.trials_rows"),
                "load(), then .history": ("read_back.load_then_history_s", "read_back.history_rows"),
                "REST: the experiments listing": ("http.listing_s", "http.listed"),
                "REST: one experiment": ("http.experiment_s", "http.experiment_trials"),
                "REST: every metric, paged": ("http.metrics_all_pages_s", "http.metrics_rows"),
                "REST: one page of metrics": ("http.metrics_per_page_s", None),
            },
        ),
    },
    "scalability": {
        "efficiency": lambda r: grid(
            r,
            each(r, "shapes", skip=("dispatch",)),
            {
                "trials": "what",
                "workers × threads": lambda d: f"{d['sizes']['workers']} × {d['sizes']['threads']}",
                "minimum": "minimum_s",
                "wall": "wall_s",
                "efficiency": "efficiency",
                "0.4, same machine": lambda d: fmt(
                    d["minimum_s"] / d["sizes"]["issue_0_4_wall_s"]
                    if d["sizes"]["issue_0_4_wall_s"]
                    else None
                ),
                "Ray Tune, published": "sizes.ray_published.efficiency",
                "target met": "met",
            },
        ),
        "costs": lambda r: grid(
            r,
            each(r, "shapes", skip=("dispatch",)),
            {
                "reports delivered": "reports_check.delivered",
                "lost": "reports_check.lost",
                "doubled": "reports_check.doubled",
                "delivery p50": "latency_s.p50",
                "delivery p99": "latency_s.p99",
                "kernel CPU a trial": "kernel.ms_per_trial",
                "kernel CPU a report": "kernel.ms_per_report",
                "workers' CPU a trial": "workers.ms_per_trial",
            },
        ),
        "dispatch": lambda r: pairs(
            r,
            {
                "hpo(), median trials/s": "shapes.dispatch.ours.median_per_s",
                "raw client.map, median tasks/s": "shapes.dispatch.raw_dask.median_per_s",
                "hpo() ÷ client.map": "shapes.dispatch.ratio_ours_over_raw.median",
                "target met": "shapes.dispatch.met",
            },
        ),
    },
    "cost_model": {
        "points": lambda r: grid(
            r,
            {p["label"]: ("points", i) for i, p in enumerate(r["points"])},
            {
                "trials ended/s": "rates.trials_per_s",
                "reports/s": "rates.reports_per_s",
                "Dask events/s": "rates.events_per_s",
                "kernel": "cores.kernel",
                "scheduler": "cores.scheduler",
                "workers": "cores.workers",
                "whole machine": "cores.machine",
            },
        ),
        "model": _coefficients,
        "batching": lambda r: pairs(
            r,
            {
                **{
                    f"Dask events a report, at {rate} reports/s a trial": f"model.batching.events_per_report_by_rate.{rate}"
                    for rate in get(r, ("model", "batching", "events_per_report_by_rate"))
                },
                "Dask events a trial (start and outcome)": "model.batching.events_per_trial",
            },
        ),
        "saturation": _saturation,
        "largest": lambda r: grid(
            r,
            each(r, "largest_cluster_one_kernel_drives"),
            {
                "kernel": "trials_at_once.kernel",
                "scheduler": "trials_at_once.scheduler",
                "first to fill a core": "first_to_saturate",
                "reports/s then": "reports_per_s_then",
            },
        ),
        "held_out": _held_out,
    },
    "pruning": {
        "synthetic": _pruning_runs("synthetic"),
        "mlp": _pruning_runs("mlp"),
        "latency": lambda r: grid(
            r,
            {
                **each(r, "stop_latency_s.by_source", label=lambda k: STOP_SOURCES.get(k, k)),
                "all of them": "stop_latency_s.all",
            },
            {"pruned trials": "n", "p50": "p50", "p90": "p90", "p99": "p99", "max": "max"},
        ),
        "breakdown": lambda r: grid(
            r,
            each(
                r,
                "stop_latency_s.threshold_5ms_breakdown",
                label=lambda k: (
                    humanize((k,)).replace(" to ", " → ").replace("stop latency", "decided → stopped")
                ),
            ),
            {"p50": "p50", "p90": "p90", "p99": "p99", "max": "max"},
        ),
    },
    "ddp": {
        "main": lambda r: grid(
            r,
            {
                "plain loop in the kernel process": "plain",
                "data_parallel(), 1 rank": "ranks_1",
                "data_parallel(), 2 ranks": "ranks_2",
                "PyTorch DDP, 2 processes": "torch_ddp_2",
            },
            {"median samples/s": "median_samples_per_s.{}", "each run": "samples_per_s.{}"},
        ),
        "ratios": lambda r: pairs(
            r,
            {
                "2 ranks ÷ 1 rank": "scaling_2_over_1",
                "efficiency at 2 ranks": "efficiency_2:%",
                "1 rank ÷ the plain loop": "one_rank_over_plain_loop",
                "2 ranks ÷ PyTorch DDP": "two_ranks_over_torch_ddp",
                "PyTorch DDP ÷ the plain loop": "torch_ddp_scaling_over_plain_loop",
            },
        ),
    },
    "fsdp": {
        "main": lambda r: rows(
            r,
            ["samples/s", "model state per rank", "peak RSS growth per rank"],
            {
                "DDP": (
                    "median.ddp.samples_per_s",
                    "median.ddp.model_state_mb_per_rank",
                    "median.ddp.peak_rss_growth_mb_per_rank",
                ),
                "FSDP": (
                    "median.fsdp.samples_per_s",
                    "median.fsdp.model_state_mb_per_rank",
                    "median.fsdp.peak_rss_growth_mb_per_rank",
                ),
                "FSDP ÷ DDP": (
                    "ratios_fsdp_vs_ddp.samples_per_s",
                    "ratios_fsdp_vs_ddp.model_state_per_rank",
                    "ratios_fsdp_vs_ddp.peak_rss_growth_per_rank",
                ),
            },
        ),
    },
    "gpu": {
        "steps": lambda r: rows(
            r,
            ["plain PyTorch", "data_parallel()", "cost a step"],
            {
                **{
                    p: (
                        f"data_parallel.median_step_ms.plain_{p}",
                        f"data_parallel.median_step_ms.data_parallel_{p}",
                        f"data_parallel.overhead_per_step.{p}:+%",
                    )
                    for p in ("fp32", "bf16", "fp16")
                },
                "FSDP, fp32": (
                    "data_parallel.median_step_ms.plain_fsdp_fp32",
                    "data_parallel.median_step_ms.fsdp_fp32",
                    "data_parallel.fsdp_overhead_per_step_fp32:+%",
                ),
            },
        ),
        "other": lambda r: pairs(
            r,
            {
                "PyTorch's fully_shard ÷ the unsharded loop, world size 1": (
                    "data_parallel.plain_fsdp_over_plain_fp32"
                ),
                "hpo(gpus_per_trial=1), trials/s": "hpo.hpo_trials_per_s",
                "the same trials in a plain loop, trials/s": "hpo.plain_trials_per_s",
                "hpo() ÷ plain loop": "hpo.hpo_over_plain",
            },
        ),
    },
    "lab": {
        "open": lambda r: grid(
            r,
            {"Experiments panel": "scale.open.panel", "a reopened notebook's cell": "scale.open.cell"},
            {
                "table drawn": "table_s",
                "curves drawn": "curves_s",
                "table rows in the page": "rows_in_page",
                "long tasks": "long_tasks",
                "longest": "long_task_max_s",
            },
        ),
        "live": lambda r: rows(
            r,
            ["the live view", "a blank page"],
            {
                "trials running": ("scale.live.running_trials_at_window_start", None),
                "reports stored/s": ("scale.live.reports_stored_per_s", None),
                "frames/s": ("scale.live.frames_per_s", "scale.live.blank_page_frames_per_s"),
                "long tasks": ("scale.live.long_tasks", "scale.live.blank_page_long_tasks"),
                "longest long task": ("scale.live.long_task_max_s", None),
                "browser main thread busy": (
                    "scale.live.main_thread_cpu_share",
                    "scale.live.blank_page_main_thread_cpu_share",
                ),
            },
        ),
    },
    "gateway": {
        "first": lambda r: rows(
            r,
            ["median", "each run", "÷ embedded"],
            {
                "embedded cluster": (
                    "first_trial_running_s.median.embedded",
                    "first_trial_running_s.all.embedded",
                    None,
                ),
                "Gateway, a new cluster": (
                    "first_trial_running_s.median.gateway_new",
                    "first_trial_running_s.all.gateway_new",
                    "ratios.gateway_new_vs_embedded",
                ),
                "Gateway, the cluster a kernel kept": (
                    "first_trial_running_s.median.gateway_reused",
                    "first_trial_running_s.all.gateway_reused",
                    "ratios.gateway_reused_vs_embedded",
                ),
            },
        ),
        "channel": lambda r: rows(
            r,
            ["dispatch trials/s", "reports/s delivered", "latency p50", "latency p99", "lost"],
            {
                **{
                    label: tuple(
                        f"channel.median.{side}.{k}"
                        for k in (
                            "dispatch_trials_per_s",
                            "stream_delivered_per_s",
                            "stream_p50_s",
                            "stream_p99_s",
                            "stream_lost",
                        )
                    )
                    for label, side in (
                        ("direct dask scheduler, tcp", "direct"),
                        ("through the gateway, TLS", "gateway"),
                    )
                },
                "gateway ÷ direct": (
                    "ratios.dispatch_gateway_vs_direct",
                    None,
                    "ratios.stream_p50_gateway_vs_direct",
                    None,
                    None,
                ),
            },
        ),
    },
    "network": {
        "median": lambda r: grid(
            r,
            each(r, "median"),
            {
                "dispatch trials/s": "dispatch_trials_per_s",
                "reports/s delivered": "stream_delivered_per_s",
                "latency p50": "stream_p50_s",
                "latency p99": "stream_p99_s",
                "lost": "stream_lost",
                "data-parallel samples/s": "ddp_2_ranks_samples_per_s",
            },
        ),
        "ratios": lambda r: grid(
            r,
            each(r, "ratios"),
            {
                "dispatch": "dispatch",
                "latency p50": "stream_p50",
                "data-parallel samples/s": "ddp_samples_per_s",
            },
        ),
    },
    "checkpoints": {
        "kill": lambda r: rows(
            r,
            ["steps executed", "hpo() wall, median", "resumed from step"],
            {
                "checkpoint() and restore()": (
                    "median.with.steps_executed",
                    "median.with.wall_s",
                    "all.with.0.resumed_from",
                ),
                "no checkpoints": ("median.without.steps_executed", "median.without.wall_s", None),
                "with ÷ without": ("ratios.steps_with_vs_without", "ratios.wall_with_vs_without", None),
            },
        ),
        "save": lambda r: grid(
            r,
            {
                f"saving every {s['every']} steps".replace("every 1 steps", "every step"): ("save_cost", i)
                for i, s in enumerate(r["save_cost"])
            },
            {
                "checkpoint": "checkpoint_mb",
                "a save": "save_s",
                "MB/s": "mb_per_s",
                "a step": "step_s",
                "saving's share of the step time": "share_of_step_time",
            },
        ),
    },
    "data_by_reference": {
        "main": lambda r: grid(
            r,
            {
                "the pickle with every trial task (scatter-threshold: null)": "pickled",
                "scattered automatically (the default threshold)": "automatic",
                "with_parameters(train, data=array)": "with_parameters",
            },
            {
                "wall, median": "by_way.{}.median_wall_s",
                "loopback traffic, median": "by_way.{}.median_loopback_gb",
                "pickled ÷ this: time": "ratios.{}.wall_pickled_over_this?",
                "pickled ÷ this: bytes": "ratios.{}.bytes_pickled_over_this?",
            },
        ),
        "idle": lambda r: pairs(
            r,
            {
                "loopback traffic of an idle machine, bytes/s (measured before the runs)": "idle_loopback_bytes_per_s"
            },
        ),
    },
    "summary": {
        "run": lambda r: grid(
            r,
            each(r, "results"),
            {
                "ran in this run": "ran_now",
                "finished": lambda d: _when(d["timestamp"]) if "timestamp" in d else d.get("error", "–"),
                "wall": "wall_s?",
                "target met": "met?",
                "run again since": _runs_since,
            },
        ),
        "figures": summary_figures,
    },
}


@dataclass(frozen=True)
class Plot:
    """A plotly figure from a result: ``data(r)`` is {trace: {x: y}} ("bar", "dot"), {trace: [y, ...]} ("box")
    or {trace: {label: (x, y)}} ("xy": a marker symbol per label, the same in every trace); ``lines(r)`` are
    reference lines, ("h" or "v", where, label)."""

    data: Callable[[dict], dict]
    kind: str = "bar"
    y: str = ""
    x: str = ""
    log: bool = False
    stack: bool = False
    lines: Callable[[dict], list[tuple[str, float, str]]] = lambda r: []


def _ms(seconds: float) -> float:
    return seconds * 1000


PLOTS: dict[str, dict[str, Plot]] = {
    "scalability": {
        "efficiency": Plot(
            lambda r: {
                "jupyter_dist": {k: s["efficiency"] for k, s in r["shapes"].items() if k != "dispatch"},
                "jupyter_dist 0.4.0, same machine": {
                    k: s["minimum_s"] / s["sizes"]["issue_0_4_wall_s"]
                    for k, s in r["shapes"].items()
                    if s.get("sizes", {}).get("issue_0_4_wall_s")
                },
                "Ray Tune, published": {
                    k: s["sizes"]["ray_published"]["efficiency"]
                    for k, s in r["shapes"].items()
                    if s.get("sizes", {}).get("ray_published")
                },
            },
            kind="dot",
            y="efficiency (minimum ÷ wall)",
            lines=lambda r: [("h", 1.0, "the minimum")],
        ),
    },
    "pruning": {
        "quality": Plot(
            lambda r: {
                {"none": "no pruner"}.get(pruner, pruner): {
                    label: (
                        r[bench]["runs"][pruner]["step_share"] * 100,
                        r[bench]["runs"][pruner]["best_over_reference"],
                    )
                    for bench, label in (("synthetic", "synthetic curves"), ("mlp", "digits MLP"))
                }
                for pruner in r["synthetic"]["runs"]
            },
            kind="xy",
            x="steps used, % of the no-pruner run's",
            y="best found ÷ no-pruner best",
            lines=lambda r: [
                ("v", r["target"]["max_step_share_of_no_pruner"] * 100, "target: at most"),
                ("h", 1 - r["target"]["best_within_of_no_pruner_best"], "target: at least"),
            ],
        ),
        "latency": Plot(
            lambda r: {
                STOP_SOURCES.get(source, source).split(" (")[0]: [_ms(v) for v in values]
                for source, values in r["stop_latency_s"]["raw_s"].items()
            },
            kind="box",
            y="stop latency, ms",
            lines=lambda r: [("h", _ms(r["target"]["stop_latency_p50_s"]), "target for the p50")],
        ),
    },
    "streaming": {
        "latency": Plot(
            lambda r: {
                q: {label: _ms(get(r, (*path.split("."), f"{q}_s"))) for label, path in STREAM_RUNS.items()}
                for q in ("p50", "p99")
            },
            y="report → kernel latency, ms (log scale)",
            log=True,
            lines=lambda r: [("h", _ms(r["target"]["p50_latency_s_below"]), "target for the p50")],
        ),
    },
    "ddp": {
        "samples": Plot(
            lambda r: {
                label: r["samples_per_s"][key]
                for key, label in (
                    ("plain", "plain loop"),
                    ("ranks_1", "1 rank"),
                    ("ranks_2", "2 ranks"),
                    ("torch_ddp_2", "PyTorch DDP, 2 processes"),
                )
            },
            kind="box",
            y="samples/s, each run",
        ),
    },
    "trial_speed": {
        "rounds": Plot(
            lambda r: {
                label: r["results"][key]["ratios_per_round"]
                for key, label in (("digits", "digits MLP"), ("compute", "compute-bound MLP"))
            },
            kind="box",
            y="pool wall ÷ hpo() wall, each round",
            lines=lambda r: [
                ("h", r["target"]["ratio_pool_over_ours_at_least"], "target"),
                ("h", 1.0, "as fast as the pool"),
            ],
        ),
    },
    "gpu": {
        "steps": Plot(
            lambda r: {
                side: {
                    label: r["data_parallel"]["median_step_ms"][keys[i]]
                    for label, keys in (
                        ("fp32", ("plain_fp32", "data_parallel_fp32")),
                        ("bf16", ("plain_bf16", "data_parallel_bf16")),
                        ("fp16", ("plain_fp16", "data_parallel_fp16")),
                        ("FSDP, fp32", ("plain_fsdp_fp32", "fsdp_fp32")),
                    )
                }
                for i, side in enumerate(("plain PyTorch", "data_parallel()"))
            },
            y="ms a step (median)",
        ),
    },
    "cost_model": {
        "cores": Plot(
            lambda r: {
                proc: {p["label"]: p["cores"][proc] for p in r["points"]}
                for proc in ("kernel", "scheduler", "workers")
            },
            y="cores (CPU seconds a second)",
            stack=True,
        ),
    },
}


SYMBOLS = ("circle", "diamond", "square", "triangle-up")


def figure(plot: Plot, r: dict) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in plot.data(r).items():
        if plot.kind == "box":
            fig.add_box(y=values, name=name, boxpoints="all", jitter=0.4, pointpos=0)
        elif plot.kind == "xy":
            xs, ys = zip(*values.values(), strict=True)
            symbols = [SYMBOLS[i % len(SYMBOLS)] for i in range(len(xs))]  # a symbol per label, in order
            fig.add_scatter(
                x=xs,
                y=ys,
                hovertext=list(values),
                name=name,
                mode="markers",
                marker={"symbol": symbols, "size": 11},
            )
        elif plot.kind == "dot":
            fig.add_scatter(
                x=list(values), y=list(values.values()), name=name, mode="markers", marker_size=11
            )
        else:
            fig.add_bar(x=list(values), y=list(values.values()), name=name)
    for direction, at, label in plot.lines(r):
        if direction == "v":
            fig.add_vline(at, line_dash="dot", line_color="grey", annotation_text=label)
            continue
        fig.add_hline(at, line_dash="dot", line_color="grey")
        # its label apart: an annotation on a log axis is placed in log10 units, the line in data units
        y = math.log10(at) if plot.log else at
        fig.add_annotation(
            text=label, xref="paper", x=1, y=y, showarrow=False, xanchor="right", yanchor="bottom"
        )
    fig.update_layout(
        template="plotly_white",
        barmode="stack" if plot.stack else "group",
        showlegend=plot.kind != "box",
        xaxis_title=plot.x,
        yaxis_title=plot.y,
        yaxis_type="log" if plot.log else None,
        margin={"l": 60, "r": 20, "t": 30, "b": 60},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


# --- the directives -------------------------------------------------------------------------------------------
def table_node(header: list[str] | None, body: list[list[str]], caption: str | None) -> nodes.table:
    def row(cells: list[str | nodes.Node]) -> nodes.row:
        return nodes.row(
            "", *(nodes.entry("", c if isinstance(c, nodes.Node) else nodes.paragraph(text=c)) for c in cells)
        )

    width = len(header or body[0])
    table = nodes.table(classes=["bench-table"])
    if caption:
        table += nodes.title(text=caption)
    group = nodes.tgroup(cols=width)
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in range(width))
    if header:
        group += nodes.thead("", row(header))
    group += nodes.tbody("", *(row(cells) for cells in body))
    return table


class _Bench(SphinxDirective):
    required_arguments = 1
    option_spec = {"caption": directives.unchanged}
    registry: dict[str, dict[str, Any]] = {}
    key_option = ""

    def result(self) -> tuple[str, dict]:
        name = self.arguments[0]
        path = RESULTS / f"{name}.json"
        if not path.exists():
            raise self.error(f"{self.name}: there is no {path.relative_to(ROOT)}")
        self.env.note_dependency(str(path))
        if name == "summary":  # its figures table reads the benchmarks' own files
            for other in BENCHMARKS:
                self.env.note_dependency(str(RESULTS / f"{other}.json"))
        return name, load(name)

    def chosen(self, name: str) -> tuple[str, Any]:
        choices = self.registry.get(name)
        if not choices:
            raise self.error(f"{self.name}: nothing is defined for {name!r} in docs/_ext/bench_results.py")
        key = self.options.get(self.key_option) or next(iter(choices))
        if key not in choices:
            raise self.error(
                f"{self.name} {name}: no {self.key_option} {key!r}; choose from {', '.join(choices)}"
            )
        return key, choices[key]

    def missing(self, name: str, key: str, error: KeyError) -> Exception:
        what = error if isinstance(error, MissingKey) else f"no key {error}"
        return self.error(f"{self.name} {name} ({key}): bench/results/{name}.json has {what}")


class BenchTable(_Bench):
    """A table of a result file: TABLES[name][:table:]."""

    option_spec = {**_Bench.option_spec, "table": directives.unchanged}
    registry = TABLES
    key_option = "table"

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        key, make = self.chosen(name)
        try:
            header, body = make(r)
        except KeyError as e:  # MissingKey, or a key a table's own function looked up
            raise self.missing(name, key, e) from None
        return [table_node(header, body, self.options.get("caption"))]


class BenchPlot(_Bench):
    """A plotly figure of a result file: PLOTS[name][:plot:], as a div plotly.min.js draws."""

    option_spec = {**_Bench.option_spec, "plot": directives.unchanged}
    registry = PLOTS
    key_option = "plot"

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        key, plot = self.chosen(name)
        try:
            fig = figure(plot, r)
        except KeyError as e:
            raise self.missing(name, key, e) from None
        html = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"bench-{name}-{key}",
            default_height="440px",
            config={"displaylogo": False, "responsive": True},
            # drawn while the page loads, at the width the column had then: fit the column once it is laid out
            post_script="window.addEventListener('load', () => Plotly.Plots.resize('{plot_id}'));",
        )
        box = nodes.container(classes=["bench-plot"])
        box += nodes.raw("", html, format="html")
        if caption := self.options.get("caption"):
            box += nodes.paragraph(text=caption, classes=["caption"])
        return [box]


VERSIONS_SHOWN = ("jupyter_dist", "dask", "distributed", "optuna", "torch")


def _machine(r: dict, short: bool = False) -> str:
    m, gpu = r["machine"], r.get("gpu", {})
    if short:
        return gpu.get("name") or f"{m['cpu_count']} CPUs, {m['cpu_model']}"
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v and k in VERSIONS_SHOWN)
    where = f"{gpu['name']}, " if gpu.get("name") else ""
    extra = f"; CUDA {gpu['cuda']}, NCCL {gpu['nccl']}" if gpu.get("cuda") else ""
    return f"{where}{m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}; {versions}{extra}"


def _commit(r: dict) -> list[nodes.Node]:
    git = r["git"]
    out: list[nodes.Node] = [nodes.Text("commit "), nodes.literal(text=(git["commit"] or "unknown")[:7])]
    changed = git.get("package_uncommitted_changes")
    if changed:
        out.append(nodes.Text(", with uncommitted changes in "))
        for i, path in enumerate(changed):
            out += [nodes.Text(", ")] if i else []
            out.append(nodes.literal(text=path))
    return out


class BenchSource(_Bench):
    """When, at which commit and on what machine a result was measured, its target and whether it was met."""

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        fields: list[tuple[str, list[nodes.Node]]] = [
            ("Measured", [nodes.Text(f"{_when(r['timestamp'])}, "), *_commit(r)]),
            ("Machine", [nodes.Text(_machine(r))]),
        ]
        if note := r["git"].get("note"):
            fields.append(("Note", [nodes.Text(note)]))
        if share := get(r, ("cpu_contention", "other_share_of_capacity"), optional=True):
            fields.append(
                ("Other processes", [nodes.Text(f"used {fmt(share, '%')} of the machine's CPU meanwhile")])
            )
        target = r.get("target", r.get("scale_target"))
        if isinstance(target, dict):
            text = "; ".join(f"{humanize(p)}: {fmt(v, unit_of(p, v))}" for p, v in leaves(target))
            fields.append(("Target", [nodes.Text(text)]))
        if (met := r.get("met", r.get("scale_met"))) is not None:
            fields.append(("Target met", [nodes.Text(met_text(met))]))
        out = nodes.field_list(classes=["bench-source"])
        for label, body in fields:
            out += nodes.field(
                "", nodes.field_name(text=label), nodes.field_body("", nodes.paragraph("", "", *body))
            )
        return [out]


class BenchOverview(SphinxDirective):
    """A row per bench/results/*.json: its section (label "bench-<name>"), when, which commit, target met."""

    option_spec = {"caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        body = []
        for name in result_names():
            r = load(name)
            self.env.note_dependency(str(RESULTS / f"{name}.json"))
            link = addnodes.pending_xref(
                "",
                nodes.inline(text=name),
                refdomain="std",
                reftype="ref",
                reftarget=f"bench-{name}",
                refexplicit=False,
                refwarn=True,
            )
            body.append(
                [
                    nodes.paragraph("", "", link),
                    nodes.paragraph("", "", nodes.literal(text=f"{name}.json")),
                    r["timestamp"][:10],
                    nodes.paragraph("", "", nodes.literal(text=(r["git"]["commit"] or "unknown")[:7])),
                    _machine(r, short=True),
                    met_text(r.get("met", r.get("scale_met"))),
                ]
            )
        header = ["benchmark", "result file", "measured", "commit", "machine", "target met"]
        return [table_node(header, body, self.options.get("caption"))]


# --- plotly.js from the plotly package, on the pages that draw (benchmarks and executed cells) -----------
def _has_plot(node: nodes.Node) -> bool:
    """A benchmark's plot, or a figure an executed cell drew (docs/_ext/kernel_startup.py leaves plotly.js out)."""
    if isinstance(node, nodes.raw):
        return "Plotly.newPlot" in node.astext()
    return isinstance(node, nodes.container) and "bench-plot" in node["classes"]


def _add_plotly(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and next(doctree.findall(_has_plot), None) is not None:
        app.add_js_file("plotly.min.js")


def _copy_plotly(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        import plotly

        copy_asset_file(
            Path(plotly.__file__).parent / "package_data" / "plotly.min.js", app.outdir / "_static"
        )


def setup(app):
    app.add_directive("bench-table", BenchTable)
    app.add_directive("bench-plot", BenchPlot)
    app.add_directive("bench-source", BenchSource)
    app.add_directive("bench-overview", BenchOverview)
    app.connect("html-page-context", _add_plotly)
    app.connect("build-finished", _copy_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
