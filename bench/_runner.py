"""The benchmarks' one harness, so that each bench_*.py keeps only what it measures: a script's entry point
(``main``: arguments, ``--quick``, the JSON, the printed ``summary``), ``measuring`` (header, CPU contention,
wall), the embedded cluster, ``hpo()`` timed, ``ReportView`` (what reaches the kernel), ``interleave`` (sides
round after round) and ``in_child`` (one measurement in a fresh process). Kernel side only.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import _common
from _common import CpuMonitor, contention_note, header, median, percentile, write_result

CLUSTER = "jupyter_dist.get_client('local', n_workers=2, threads_per_worker=1)"


# --- a script's entry point ----------------------------------------------------------------------------------
def main(
    name: str,
    measure: Callable[..., dict],
    options: dict[str, Any] | None = None,
    quick: dict[str, Any] | None = None,
    child: tuple[str, ...] = (),
) -> None:
    """Parse the script's arguments, run ``measure`` with them by name, write ``results/<name>.json`` and print
    its ``summary()``; a ``measure`` that returns None (a child process's run) has printed its answer itself.

    ``options``: {name: default or (default, help)}, each a ``--name`` typed as its default (None: a string);
    ``child``: hidden string options, a child process's. ``quick``: the module constants a ``--quick`` smoke run
    sets, and the values it gives options (by their names; ``measure`` gets ``quick`` too if it takes it); its
    JSON goes to a temporary folder unless BENCH_RESULTS says where: smoke figures must not replace the measured
    ones in bench/results/."""
    doc = sys.modules["__main__"].__doc__ or ""
    parser = argparse.ArgumentParser(description=doc.strip().split("\n", 1)[0])
    for key, value in (options or {}).items():
        default, help = value if isinstance(value, tuple) else (value, None)
        kind = str if default is None else type(default)
        parser.add_argument(f"--{key.replace('_', '-')}", type=kind, default=default, help=help)
    for key in child:
        parser.add_argument(f"--{key.replace('_', '-')}", help=argparse.SUPPRESS)
    if quick is not None:
        sizes = f" ({', '.join(quick)})" if quick else ""
        help = f"a smoke run at small sizes{sizes}; its JSON to a temporary folder"
        parser.add_argument("--quick", action="store_true", help=help)
    args = vars(parser.parse_args())
    if args.get("quick"):
        vars(sys.modules["__main__"]).update({k: v for k, v in quick.items() if k not in args})
        args.update({k: v for k, v in quick.items() if k in args})
        if _common.RESULTS == _common.DEFAULT_RESULTS:
            _common.RESULTS = Path(tempfile.gettempdir()) / "bench-quick"
    if "quick" not in inspect.signature(measure).parameters:
        args.pop("quick", None)
    result = measure(**args)
    if result is None:  # a child process's run, printed as JSON already
        return
    path = write_result(name, result)
    print(summary(name, json.loads(path.read_text())))
    print(f"  -> {path}")


def summary(name: str, result: dict) -> str:
    """What a run prints: the tables the performance pages show of this result (docs/_ext/bench_results'
    ``TABLES[name]``, read from the JSON as written), its target and whether it was met, and the CPU other
    processes used meanwhile. One printer for every script: the figures worth reading are chosen once, there."""
    lines = [f"{name}:"]
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
        from bench_results import TABLES
    except ImportError as e:  # the docs' dependencies (sphinx) not installed: the JSON still has it all
        TABLES, lines = {}, [*lines, f"  (no tables: {e})"]
    for key, make in TABLES.get(name, {}).items():
        try:
            head, rows = make(result)
        except Exception as e:  # a smoke run's JSON may lack what a table needs
            lines.append(f"  {key}: not shown ({type(e).__name__}: {e})")
            continue
        table = [head, *rows] if head else rows
        widths = [max(len(row[i]) for row in table if i < len(row)) for i in range(max(map(len, table)))]
        lines += [f"  {key}:"] + [
            "    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
            for row in table
        ]
    for key in ("target", "met"):
        if result.get(key) is not None:
            lines.append(f"  {key}: {json.dumps(result[key])}")
    if "cpu_contention" in result:
        lines.append(contention_note(result["cpu_contention"]))
    return "\n".join(lines)


def constants(*names: str, **more: Any) -> dict[str, Any]:
    """A result's parameters: the script's module constants ``names`` as this run has them (``--quick`` changes
    some), by their lower-case names, and ``more``."""
    return {name.lower(): getattr(sys.modules["__main__"], name) for name in names} | more


@contextlib.contextmanager
def measuring(name: str, parameters: dict[str, Any], wall: bool = True, note: bool = False):
    """Yield the result (its header made now) and add ``cpu_contention`` (and ``wall_s``, and ``note``: the
    contention in words) once the body is done: close the cluster inside it, so the workers are reaped and their
    CPU counted as this benchmark's."""
    t0 = time.perf_counter()
    cpu = CpuMonitor()
    result = header(name, parameters)
    yield result
    result["cpu_contention"] = cpu.stop()
    if wall:
        result["wall_s"] = time.perf_counter() - t0
    if note:
        result["note"] = contention_note(result["cpu_contention"])


# --- the cluster and the call --------------------------------------------------------------------------------
@contextlib.contextmanager
def local_cluster(workers: int = 2, threads: int = 1, timeout: float = 60):
    """The embedded LocalCluster (``jupyter_dist.get_client("local", ...)``) with every worker up; closed after."""
    import jupyter_dist

    client = jupyter_dist.get_client("local", n_workers=workers, threads_per_worker=threads)
    try:
        client.wait_for_workers(workers, timeout=timeout)
        yield client
    finally:
        jupyter_dist.close_local_cluster()


def timed(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and the wall seconds it took."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def hpo(fn: Callable, space: dict, client: Any, **options: Any) -> tuple[Any, float]:
    """``jupyter_dist.hpo(fn, space, cluster=client, ...)`` as the benchmarks call it: the random sampler and no
    view unless ``options`` say otherwise (every other option is hpo()'s own default or the caller's); the
    experiment and the wall seconds of the whole call."""
    import jupyter_dist

    return timed(
        jupyter_dist.hpo, fn, space, cluster=client, **{"sampler": "random", "progress": False, **options}
    )


def sleepers(client, seconds: float, rate: float, trials: int, parallel: int, name: str | None = None):
    """``hpo()`` of ``trials`` x ``_workloads.sleep_and_report`` (``seconds`` long, ``rate`` reports/s),
    ``parallel`` at once, no pruner: without ``name`` a warm-up (x = 0.5, no store), else measured (seed 0,
    ``ReportView``, a fresh store file)."""
    from _workloads import sleep_and_report

    from jupyter_dist import space

    run = {"client": client, "trials": trials, "parallel": parallel, "metric": "v", "pruner": None}
    if name is None:
        return hpo(sleep_and_report, {"x": 0.5, "seconds": seconds, "rate": rate}, **run, store=False)
    with tempfile.TemporaryDirectory(prefix=f"jupyter_dist-bench-{name}-") as folder:
        store = os.path.join(folder, "experiments.sqlite")
        search = {"x": space.uniform(0, 1), "seconds": seconds, "rate": rate}
        return hpo(sleep_and_report, search, **run, seed=0, name=name, progress=ReportView, store=store)


# --- what reaches the kernel ---------------------------------------------------------------------------------
class ReportView:
    """A ``progress=`` view recording what arrives: each delivery's kernel ``time.time()`` and size, each report's
    latency (that minus the worker's ``time.time()`` in ``report()``, same host), each trial's count; ``steps``:
    every report's (trial, step, sent_at, received_at). Its listener runs on the Dask IO thread and only appends.
    ``live``: it also drives the real ``LiveView`` (throttled redraws on the main thread, each timed).

    Pass it (or a ``functools.partial``) as ``hpo(progress=...)`` and read ``ReportView.last`` afterwards;
    ``ReportView(None)`` records a raw baseline that feeds ``received_one`` itself."""

    last: ReportView | None = None

    def __init__(self, exp, steps: bool = False, live: bool = False) -> None:
        self.exp = exp
        self.per_trial: dict[Any, int] = {}
        self.latency: list[float] = []
        self.arrivals: list[tuple[float, int]] = []
        self.rows: list[tuple[Any, int, float, float]] | None = [] if steps else None
        self.live = self.draws = None
        self.idles = 0
        if live:
            from jupyter_dist.widgets._live import LiveView

            self.live, self.draws = LiveView(exp), []
            draw = self.live.draw

            def timed_draw() -> None:
                t0 = time.perf_counter()
                draw()
                self.draws.append(time.perf_counter() - t0)

            self.live.draw = timed_draw  # the throttle in ExperimentView.idle() calls self.draw()
        ReportView.last = self

    def start(self) -> None:
        self.exp._add_report_listener(self.received)
        if self.live is not None:
            self.live.start()

    def received(self, trial_id, rows) -> None:
        now = time.time()
        self.arrivals.append((now, len(rows)))
        self.per_trial[trial_id] = self.per_trial.get(trial_id, 0) + len(rows)
        self.latency.extend(now - sent_at for _, _, sent_at in rows)
        if self.rows is not None:
            self.rows.extend((trial_id, step, sent_at, now) for step, _, sent_at in rows)

    def received_one(self, sent_at: float) -> None:
        """One message of a raw baseline (no trial), at the cost of two appends."""
        now = time.time()
        self.arrivals.append((now, 1))
        self.latency.append(now - sent_at)

    def idle(self) -> None:
        self.idles += 1
        if self.live is not None:
            self.live.idle()

    def finish(self) -> None:
        if self.live is not None:
            self.live.finish()

    def delivered(self) -> int:
        return sum(self.per_trial.values())

    def by_trial(self) -> dict[Any, list[tuple[int, float, float]]]:
        """``steps=True``: each trial's reports as (step, sent_at, received_at)."""
        out: dict[Any, list[tuple[int, float, float]]] = {}
        for trial_id, step, sent_at, received_at in self.rows or ():
            out.setdefault(trial_id, []).append((step, sent_at, received_at))
        return out

    def check(self, records) -> dict[str, Any]:
        """Against each trial's own count of the reports it sent (its objective value, see
        ``_workloads.sleep_and_report``): none lost, none doubled."""
        lost = doubled = wrong = 0
        for rec in records:
            sent = int(rec.value) if rec.value is not None else 0
            got = self.per_trial.get(rec.trial_id, 0)
            lost += max(0, sent - got)
            doubled += max(0, got - sent)
            wrong += got != sent
        return {
            "sent": sum(int(r.value or 0) for r in records),
            "delivered": self.delivered(),
            "lost": lost,
            "doubled": doubled,
            "trials_whose_count_differs": wrong,
            "every_trial_exact": wrong == 0,
        }

    def latency_s(self, t0: float | None = None, t1: float | None = None) -> dict[str, float | None]:
        """p50, p99 and max of the reports delivered between ``t0`` and ``t1`` (``time.time()``; default all)."""
        latency = self.latency
        if t0 is not None or t1 is not None:
            latency, at = [], 0  # each delivery's latencies follow the previous one's in self.latency
            for arrived, n in self.arrivals:
                if (t0 is None or arrived >= t0) and (t1 is None or arrived < t1):
                    latency.extend(self.latency[at : at + n])
                at += n
        return {
            "p50": percentile(latency, 50),
            "p99": percentile(latency, 99),
            "max": max(latency, default=None),
        }

    def stats(self, sent: int, run_s: float) -> dict[str, Any]:
        """Throughput and latency of everything received against ``sent`` reports over ``run_s`` seconds:
        delivered/s over the first send .. last arrival, latency quantiles, and latency by second of the run (by
        send time: a growing backlog shows as rising latency)."""
        arrived = [at for at, n in self.arrivals for _ in range(n)]
        lat, n = self.latency, len(self.latency)
        sent_at = [a - x for a, x in zip(arrived, lat, strict=True)]
        span = (max(arrived) - min(sent_at)) if n else 0.0
        by_second: dict[int, list[float]] = {}
        first = min(sent_at) if n else 0.0
        for s, latency in zip(sent_at, lat, strict=True):
            by_second.setdefault(int(s - first), []).append(latency)
        return {
            "sent": sent,
            "received": n,
            "lost": sent - n,
            "run_s": run_s,
            "first_send_to_last_arrival_s": span,
            "sent_per_s": sent / run_s if run_s else None,
            "delivered_per_s": n / span if span else None,
            "latency_s": {
                **{f"p{q}": percentile(lat, q) for q in (50, 90, 99)},
                "max": max(lat) if lat else None,
                "mean": sum(lat) / n if n else None,
            },
            "latency_by_second_of_run": [
                {"second": sec, "messages": len(v), "p50_s": percentile(v, 50), "p99_s": percentile(v, 99)}
                for sec, v in sorted(by_second.items())
            ],
        }


# --- sides side by side ----------------------------------------------------------------------------------------
def interleave(
    rounds: int,
    sides: dict[str, Callable[[int], Any]],
    order: str = "fixed",
    show: bool = True,
    orders: list[list[str]] | None = None,
) -> dict[str, list]:
    """Each round runs every side once (``sides[name](round)``), so the machine's drift hits them alike; the
    order per round: "fixed", "rotate" (each side first in turn) or "alternate" (reversed every other round).
    ``show``: print each run's ``brief()`` line; ``orders`` gets each round's order. Returns every side's
    outcomes in order."""
    names = list(sides)
    runs: dict[str, list] = {name: [] for name in names}
    for r in range(rounds):
        if order == "rotate":
            turn = names[r % len(names) :] + names[: r % len(names)]
        elif order == "alternate" and r % 2:
            turn = names[::-1]
        else:
            turn = names
        if orders is not None:
            orders.append(turn)
        for name in turn:
            runs[name].append(sides[name](r))
            if show:
                print(brief(f"round {r} {name}", runs[name][-1]), flush=True)
    return runs


def brief(label: str, outcome: Any) -> str:
    """A progress line: ``label`` and the numbers of ``outcome`` (a number, or a dict's, nested dicts' as
    "key.key"), 3 significant digits; a failed child's error and the end of its stderr."""
    if isinstance(outcome, dict) and outcome.get("error"):
        return f"  {label}: FAILED ({outcome['error']}): {str(outcome.get('stderr', ''))[-600:]}"

    def numbers(value: Any, key: str) -> list[str]:
        if isinstance(value, dict):
            return [n for k, v in value.items() for n in numbers(v, f"{key}.{k}".strip("."))]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return []
        return [f"{key} {value:,.0f}" if abs(value) >= 1000 else f"{key} {value:.3g}".strip()]

    return f"  {label}: {', '.join(numbers(outcome, ''))}"


def medians(runs: Iterable[dict], keys: Iterable[str] | None = None) -> dict[str, float]:
    """The median of each key (default: the first run's keys) over ``runs``."""
    runs = list(runs)
    return {key: median([r[key] for r in runs]) for key in (keys or runs[0])}


# --- one measurement in a fresh process ------------------------------------------------------------------------
def in_child(args: list[str], timeout: float, label: dict[str, Any] | None = None) -> dict:
    """Run this script again as ``python <script> *args`` and return the JSON its last line prints
    (``child_main``); a failure or a timeout as ``{**label, "error": ..., "stderr": ...}`` when ``label`` is given
    (the caller records it and goes on), else raised."""
    cmd = [sys.executable, sys.modules["__main__"].__file__, *args]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=_common.die_with_parent
        )
        error = f"exit {done.returncode}" if done.returncode else None
        stderr = done.stderr
    except subprocess.TimeoutExpired as e:
        error, stderr = f"timed out after {timeout:.0f} s", str(e.stderr)
    if error is None:
        return json.loads(done.stdout.strip().splitlines()[-1])
    if label is None:
        raise RuntimeError(f"{' '.join(args)}: {error}\n{stderr[-4000:]}")
    return {**label, "error": error, "stderr": stderr[-4000:]}


def child_main(out: dict) -> None:
    """A child process's answer: its figures as JSON on the last line of stdout."""
    print(json.dumps(out))
