"""Loading bench/results/*.json, the unit a value's path implies and its formatting, paths into a result, and the
table builders (``grid``, ``rows``, ``pairs``, ``each`` and the tables built by hand) that TABLES uses."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
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
