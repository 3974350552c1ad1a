"""The cost model: the cores the kernel, the scheduler and the workers use per trial, per report and per Dask
event, fitted on 64 ``dask worker`` processes x 16 threads, each point a fresh kernel running ``hpo()`` of
sleeping trials, checked at two held-out points. Method: docs/performance/scalability.md, "The cost model".
Run: ``.venv/bin/python bench/bench_cost_model.py`` (~10 min; ``--quick``: 8 workers, points of 10 s).

``--ceiling N``: instead of the fit, the ceiling of one kernel and one scheduler: the real ``dask scheduler`` and
``--workers`` (64) ``dask worker --no-nanny`` processes of 1 thread (256 MiB memory limit each), and a fresh kernel
process that runs one ``hpo()`` of N no-op trials of 3 reports (random sampler, no pruner, the store on, one trial
per worker at a time) after a warm-up; trials/s over the run, over its steady middle (the 2nd to 9th tenth of the
trials, by end) and per tenth; CPU seconds per trial of the kernel (by thread), the scheduler and the workers, in
the middle and per tenth; the trials/s at which the kernel and the scheduler would each fill one core. It writes
the ``ceiling`` entry of ``cost_model.json`` and keeps the rest of that file (a run of the fit keeps ``ceiling``).
Run: ``.venv/bin/python bench/bench_cost_model.py --ceiling 100000`` (``--quick --ceiling 2000``: 8 workers).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import _common
import _runner
from _common import CpuSampler, DaskProcessCluster, header, least_squares
from _runner import ReportView, brief, child_main, in_child, measuring, sleepers
from distributed.diagnostics.plugin import SchedulerPlugin
from run_all import wait_for_quiet

WORKERS = 64
THREADS = 16
POINT_S = 25.0
IDLE_S = 15.0
MIN_WINDOW_S = 5.0
AT_ONCE_MULTIPLES = (1, 2, 4, 8, 16)  # x workers
REPORT_RATES = (2, 5, 10)  # at 2 x workers at once
CHURN_SECONDS = (8.0, 4.0, 2.0, 1.0)  # at 2 x workers at once
CHURN_ROUNDS = 4  # at least
HELD_OUT_CHURN_S = 1.5
HELD_OUT_RATE = 3
HELD_OUT_SHARE = 0.6
SATURATED_CORE = 0.85
SATURATED_MACHINE = 0.90
SATURATED_P99_S = 2.0
PREDICT_RATES = (0.1, 1, 10)
PREDICT_SECONDS = (10, 60, 600)
TOLERANCE = {"cores": 0.05, "relative": 0.25}  # a held-out check passes within either
# The README's settings for a cluster of one's own ("Where it runs"), in every process of this one.
CLUSTER_ENV = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "500ms",
    "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING": "False",
}
EVENT_COUNTER = "bench-event-counter"


@dataclass(frozen=True)
class Point:
    sweep: str
    kind: str  # "idle", "long" (N at once for ``seconds``, reporting) or "churn" (short trials, no reports)
    at_once: int = 0
    rate: float = 0.0
    seconds: float = 0.0
    trials: int = 0

    @property
    def label(self) -> str:
        if self.kind == "idle":
            return "idle"
        if self.kind == "long":
            return f"{self.at_once} at once x {self.rate:g}/s"
        return f"{self.at_once} at once x {self.seconds:g} s trials"


def sweeps(workers: int, threads: int, seconds: float) -> dict[str, list[Point]]:
    slots = workers * threads
    at_once = sorted({min(slots, m * workers) for m in AT_ONCE_MULTIPLES})
    return {
        "idle": [Point("idle", "idle", seconds=IDLE_S * seconds / POINT_S)],
        "at_once": [Point("at_once", "long", n, 1, seconds, n) for n in at_once],
        "report_rate": [
            Point("report_rate", "long", 2 * workers, r, seconds, 2 * workers) for r in REPORT_RATES
        ],
        "churn": [
            Point("churn", "churn", 2 * workers, 0, d, 2 * workers * max(CHURN_ROUNDS, round(seconds / d)))
            for d in CHURN_SECONDS
        ],
    }


# --- on the scheduler: count the experiment's events --------------------------------------------------------
class EventCounter(SchedulerPlugin):
    """Stamps every event logged on a topic starting with ``prefix`` (jupyter_dist's are ``jupyter_dist-<id>``)."""

    def __init__(self, prefix: str = "jupyter_dist-") -> None:
        self.prefix = prefix
        self.times: list[float] = []

    def log_event(self, topic, msg) -> None:
        if isinstance(topic, str) and topic.startswith(self.prefix):
            self.times.append(time.time())


def _event_times(dask_scheduler=None) -> list[float]:
    return dask_scheduler.plugins[EVENT_COUNTER].times


def _preimport() -> None:
    """What a trial's task imports, on each worker first: it would otherwise cost each ~1 s of CPU in the ramp."""
    import jupyter_dist.trials  # noqa: F401


# --- one point, in a fresh kernel process -------------------------------------------------------------------
def run_point(point: Point, cluster: dict) -> dict:
    from distributed import Client

    client = Client(cluster["address"], set_as_default=False)
    try:
        client.wait_for_workers(cluster["workers"], timeout=120)
        sleepers(client, 0.01, 1, 8, 8)  # the kernel's own first experiment (imports, connections)
        client.register_plugin(EventCounter(), name=EVENT_COUNTER)
        groups = {"scheduler": [cluster["scheduler_pid"]], "workers": cluster["worker_pids"]}
        sampler = CpuSampler(groups, interval=0.5).start()
        exp = None
        t0 = time.perf_counter()
        if point.kind == "idle":
            time.sleep(point.seconds)
        else:
            exp, _ = sleepers(client, point.seconds, point.rate, point.trials, point.at_once, "cost-model")
        wall = time.perf_counter() - t0
        sampler.stop()
        events = client.run_on_scheduler(_event_times)
        client.unregister_scheduler_plugin(EVENT_COUNTER)
    finally:
        client.close()
    return measure_point(point, sampler, exp, events, wall)


def measure_point(point: Point, sampler: CpuSampler, exp, events: list[float], wall: float) -> dict:
    out = {"point": asdict(point), "label": point.label, "wall_s": wall}
    if exp is None:
        cpu = sampler.window()
        records, view = [], None
    else:
        records = exp.trial_records()
        view = ReportView.last
        starts = sorted(r.started for r in records)
        ends = sorted(r.started + (r.duration or 0.0) for r in records)
        full = starts[min(point.at_once, len(starts)) - 1]  # when the N-th trial began
        if point.kind == "long":  # a straggler or two (1%) must not shrink the window to nothing
            t0, t1 = starts[max(0, math.ceil(0.99 * len(starts)) - 1)] + 0.5, ends[0] - 0.5
        else:
            t0, t1 = full + 0.5, starts[-1] - 0.5
        first = starts[0]
        out["ramp_s"] = {
            "nth_start": full - first,
            "last_start": starts[-1] - first,
            "first_end": ends[0] - first,
        }
        if t1 - t0 < MIN_WINDOW_S:
            return dict(out, error=f"no steady window of {MIN_WINDOW_S:g} s: ramp {out['ramp_s']}")
        cpu = sampler.window(t0, t1, clock="time")
    t0, t1, span = cpu["from"], cpu["to"], cpu["wall_s"]
    ncpu = os.cpu_count() or 1
    used = {"kernel": cpu["kernel_s"], **cpu["groups_s"], "machine": cpu["machine_s"]}  # CPU seconds
    ours = used["kernel"] + used["scheduler"] + used["workers"]
    used["others"] = max(0.0, cpu["machine_s"] - ours - cpu["threads_s"].get("benchmark", 0.0))
    cores = {name: seconds / span for name, seconds in used.items()}
    running = (
        sum(max(0.0, min(t1, r.started + (r.duration or 0.0)) - max(t0, r.started)) for r in records) / span
    )
    began = sum(t0 <= r.started < t1 for r in records)
    ended = sum(t0 <= r.started + (r.duration or 0.0) < t1 for r in records)
    rates = {
        "trials_per_s": (began + ended) / 2 / span,  # one trial = one start and one end
        "reports_per_s": sum(n for at, n in view.arrivals if t0 <= at < t1) / span if view else 0.0,
        "events_per_s": sum(t0 <= at < t1 for at in events) / span,
        "running": running,
    }
    latency = view.latency_s(t0, t1) if view else None  # the window's reports: the ramp's wait longer
    reasons = [f"{k} {cores[k]:.2f} cores" for k in ("kernel", "scheduler") if cores[k] > SATURATED_CORE]
    if (cores["machine"] - cores["others"]) > SATURATED_MACHINE * ncpu:
        reasons.append(
            f"this benchmark used {(cores['machine'] - cores['others']) / ncpu:.0%} of the machine"
        )
    p99 = latency["p99"] if latency else None
    if p99 is not None and p99 > SATURATED_P99_S:
        reasons.append(f"report latency p99 {p99:.1f} s")
    durations = [r.duration for r in records if r.duration is not None]
    mean = sum(durations) / len(durations) if durations else None
    if mean is not None and mean > point.seconds + max(0.25, 0.05 * point.seconds):
        reasons.append(f"trials overran: mean {mean:.2f} s for {point.seconds:g} s")
    out.update(
        window={"from": t0, "to": t1, "seconds": span},
        cores=cores,
        kernel_threads_cores={role: s / span for role, s in cpu["threads_s"].items()},
        rates=rates,
        events_total=len(events),
        reports_check=view.check(records) if view else None,
        latency_s=latency,
        latency_whole_run_s=view.latency_s() if view else None,
        trial_duration_s={"nominal": point.seconds, "mean": mean},
        counts=exp.counts() if exp is not None else None,
        saturated=reasons,
    )
    return out


# --- the fit ---------------------------------------------------------------------------------------------------
MODELS = {
    "per_trial_per_report": ("trials_per_s", "reports_per_s"),
    "per_trial_per_report+running": ("trials_per_s", "reports_per_s", "running"),
    "per_trial_per_event": ("trials_per_s", "events_per_s"),
    "per_trial_per_report+running+per_event": ("trials_per_s", "reports_per_s", "running", "events_per_s"),
}
USER_MODELS = ("per_trial_per_report", "per_trial_per_report+running")
PROCESSES = ("kernel", "scheduler", "workers")


def predict(coefficients: dict, rates: dict) -> float:
    return coefficients["idle_cores"] + sum(
        c * rates[f] for f, c in coefficients.items() if f != "idle_cores"
    )


def batching(points: list[dict]) -> dict:
    """How many Dask events the runtime made of reports and trials, as measured: events per report at each
    report rate (at the most trials at once run at that rate) and events per trial (churn points)."""
    per_report: dict[float, tuple[int, float]] = {}
    for p in points:
        if p["point"]["kind"] == "long" and p["rates"]["reports_per_s"]:
            rate, n = p["point"]["rate"], p["point"]["at_once"]
            ratio = (p["rates"]["events_per_s"] - p["rates"]["trials_per_s"]) / p["rates"]["reports_per_s"]
            if rate not in per_report or n > per_report[rate][0]:
                per_report[rate] = (n, ratio)
    churn = [p["rates"] for p in points if p["point"]["kind"] == "churn"]
    churn = [rates["events_per_s"] / rates["trials_per_s"] for rates in churn]
    return {
        "events_per_report_by_rate": {rate: ratio for rate, (_, ratio) in sorted(per_report.items())},
        "events_per_trial": sum(churn) / len(churn) if churn else 1.0,
    }


def _events_per_report(rate: float, measured: dict[float, float]) -> float | None:
    """At a measured rate, its ratio; below the lowest, the lowest's (reports further apart travel alone at
    least as often); between two, interpolated in log rate; above the highest, unknown."""
    if not measured:
        return None
    rates = sorted(measured)
    if rate <= rates[0]:
        return measured[rates[0]]
    for lo, hi in zip(rates, rates[1:], strict=False):
        if lo <= rate <= hi:
            w = math.log(rate / lo) / math.log(hi / lo)
            return measured[lo] + w * (measured[hi] - measured[lo])
    return measured[rate] if rate in measured else None


def saturation(coefficients: dict, made: dict) -> dict:
    """N* = (1 - a) / (b/T + c r + d + e (r x events per report + events per trial / T)): the trials at once,
    each T s long reporting r times a second, that load the process with one core (events per report and per
    trial as measured, ``batching()``)."""
    terms = ("idle_cores", "trials_per_s", "reports_per_s", "running", "events_per_s")
    a, b, c, d, e = (coefficients.get(term, 0.0) for term in terms)
    table = {}
    for r in PREDICT_RATES:
        ratio = _events_per_report(r, made["events_per_report_by_rate"]) if e else 0.0
        for t in PREDICT_SECONDS:
            key = f"{r:g}/s, {t} s trials"
            if ratio is None:
                table[key] = None  # a rate past the measured ones: how its reports batch is unknown
                continue
            per_trial = b / t + c * r + d + e * (r * ratio + made["events_per_trial"] / t)
            n = (1 - a) / per_trial if per_trial > 0 else None
            table[key] = {
                "trials_at_once": n,
                "reports_per_s": n * r if n is not None else None,
                "trials_per_s": n / t if n is not None else None,
            }
    return {
        "trials_at_once_by_rate_and_length": table,
        "reports_per_s_alone": (1 - a) / c if c > 0 else None,  # long trials, nothing else
        "events_per_s_alone": (1 - a) / e if e > 0 else None,
        "trials_per_s_alone": (1 - a) / b if b > 0 else None,  # trials that do not report
    }


def model(points: list[dict]) -> dict:
    fitted = [
        p for p in points if not p.get("saturated") and "error" not in p and p["point"]["sweep"] != "held_out"
    ]
    made = batching(fitted)
    out: dict = {"points_fitted": [p["label"] for p in fitted], "batching": made, "by_process": {}}
    for process in PROCESSES:
        fits = {}
        for name, features in MODELS.items():
            xs = [[p["rates"][f] for f in features] for p in fitted]
            ys = [p["cores"][process] for p in fitted]
            fits[name] = least_squares(xs, ys, ("idle_cores", *features))
        loo = {name: f["leave_one_out_rms"] for name, f in fits.items() if f}
        best = min(loo, key=loo.get) if loo else None
        user = min((n for n in USER_MODELS if n in loo), key=loo.get, default=None)
        events_better = None
        if "per_trial_per_event" in loo and "per_trial_per_report" in loo:
            events_better = loo["per_trial_per_event"] < loo["per_trial_per_report"]
        out["by_process"][process] = {
            "fits": fits,
            "best_form": best,  # the least leave-one-out error of all four
            "user_form": user,  # the better of the two in trials and reports alone
            "events_explain_better_than_reports": events_better,
            "saturation": {
                name: saturation(fits[name]["coefficients"], made)
                for name in {best, user}
                if name is not None
            },
        }
    return out


def held_out_points(points: list[dict], workers: int, threads: int, seconds: float) -> list[Point]:
    ok = [p for p in points if not p.get("saturated") and "error" not in p]
    long = [p for p in ok if p["point"]["kind"] == "long"]
    churn = [p for p in ok if p["point"]["kind"] == "churn"]
    chosen = []
    if long:
        reports = HELD_OUT_SHARE * max(p["rates"]["reports_per_s"] for p in long)
        n = max(16, min(workers * threads, 16 * round(reports / HELD_OUT_RATE / 16)))
        if any(p["point"]["at_once"] == n and p["point"]["rate"] == HELD_OUT_RATE for p in long):
            n += 16
        chosen.append(Point("held_out", "long", n, HELD_OUT_RATE, seconds, n))
    if churn:
        trials_per_s = HELD_OUT_SHARE * max(p["rates"]["trials_per_s"] for p in churn)
        n = max(16, min(workers * threads, 16 * round(trials_per_s * HELD_OUT_CHURN_S / 16)))
        rounds = max(CHURN_ROUNDS, round(seconds / HELD_OUT_CHURN_S))
        chosen.append(Point("held_out", "churn", n, 0, HELD_OUT_CHURN_S, n * rounds))
    return chosen


def _versus(predicted: float, measured: float) -> dict:
    error = predicted - measured
    relative = error / measured if measured else None
    within = abs(error) <= TOLERANCE["cores"] or (measured > 0 and abs(relative) <= TOLERANCE["relative"])
    return {
        "predicted_cores": predicted,
        "error_cores": error,
        "relative_error": relative,
        "within_tolerance": within,
    }


def check(points: list[dict], fitted: dict) -> list[dict]:
    """Each held-out point: every form's predicted cores per process (from the rates it measured) against the
    cores measured; ``within_tolerance`` for the best and the user form."""
    out = []
    for p in (p for p in points if p["point"]["sweep"] == "held_out"):
        processes = {}
        for process in PROCESSES if "error" not in p else ():
            m, measured = fitted["by_process"][process], p["cores"][process]
            if m["best_form"] is None:
                continue
            forms = {
                n: _versus(predict(f["coefficients"], p["rates"]), measured)
                for n, f in m["fits"].items()
                if f
            }
            processes[process] = {"measured_cores": measured, "by_form": forms} | {
                f"{form}_within_tolerance": forms[m[form]]["within_tolerance"] if m[form] else None
                for form in ("best_form", "user_form")
            }
        out.append(
            {
                "label": p["label"],
                "saturated": p.get("saturated"),
                "error": p.get("error"),
                "processes": processes,
            }
        )
    return out


# --- the parent -------------------------------------------------------------------------------------------------
def _run(point: Point, cluster_file: str, points: list[dict]) -> dict:
    print(f"  {point.sweep}: {point.label}...", flush=True)
    args = ["--point", json.dumps(asdict(point)), "--cluster-file", cluster_file]
    res = in_child(args, 4 * point.seconds + 300, label={"point": asdict(point), "label": point.label})
    points.append(res)
    shown = res if "error" in res else {k: res[k] for k in ("cores", "rates", "saturated")}
    print(brief(f"{point.sweep}: {point.label}", shown), *res.get("saturated") or (), flush=True)
    return res


def main(
    workers: int,
    threads: int,
    point_seconds: float,
    ceiling: int,
    point: str | None,
    cluster_file: str | None,
):
    if point and ceiling:  # the ceiling's kernel, in a child process
        return child_main(run_ceiling(ceiling, json.loads(Path(cluster_file).read_text())))
    if point:  # one point, in a child process
        return child_main(run_point(Point(**json.loads(point)), json.loads(Path(cluster_file).read_text())))
    if ceiling:
        return dict(_previous(), ceiling=measure_ceiling(workers, ceiling))
    wall0, seconds = time.perf_counter(), point_seconds
    cluster = DaskProcessCluster(workers, threads, CLUSTER_ENV)
    points: list[dict] = []
    with _started(cluster, workers, threads) as (info, cluster_file):
        for sweep in sweeps(workers, threads, seconds).values():
            for point in sweep:
                res = _run(point, cluster_file, points)
                if res.get("saturated") or "error" in res:
                    break  # heavier points of this sweep would be saturated too
        for point in held_out_points(points, workers, threads, seconds):
            _run(point, cluster_file, points)
    fitted = model(points)
    checked = check(points, fitted)
    result = header(
        "cost_model",
        {
            "cluster": f"dask scheduler + {workers} x dask worker --no-nanny --nthreads {threads} on 127.0.0.1",
            "cluster_env": CLUSTER_ENV,
            "point_seconds": seconds,
            "run": "hpo(sleep_and_report, {'x': space.uniform(0, 1), 'seconds': S, 'rate': R}, trials=, "
            "parallel=N, metric='v', sampler='random', pruner=None, seed=0, progress=ReportView, "
            "store=<fresh file>) from a fresh kernel process per point",
            "model": "cores_p = a + b trials/s + c reports/s [+ d running] [+ e events/s], least squares over the "
            "unsaturated points but the held-out ones",
            "saturated_when": {
                "process_cores_above": SATURATED_CORE,
                "machine_busy_above": SATURATED_MACHINE,
                "report_p99_s_above": SATURATED_P99_S,
                "trials_overran": "mean > nominal + max(0.25 s, 5%)",
            },
            "tolerance": TOLERANCE,
        },
    )
    result.update(
        cluster=info,
        points=points,
        model=fitted,
        held_out_check=checked,
        largest_cluster_one_kernel_drives=_headline(fitted),
        held_out_within_tolerance={form: _judge(checked, form) for form in ("best_form", "user_form")},
        wall_s=time.perf_counter() - wall0,
    )
    if "ceiling" in (previous := _previous()):  # measured apart (--ceiling): kept
        result["ceiling"] = previous["ceiling"]
    return result


# --- the ceiling: no-op trials as fast as one kernel and one scheduler take them --------------------------------
CEILING_THREADS = 1
CEILING_MEMORY = "256MiB"
CEILING_REPORTS = 3
CEILING_WARMUP = 4  # trials a worker in the unmeasured warm-up hpo() (store off)
CEILING_SAMPLE_S = 0.5
CEILING_TIMEOUT_S = 2700  # the kernel's child process


def three_reports(x, reports):
    import jupyter_dist

    for i in range(reports):
        jupyter_dist.report(step=i, v=x * i)
    return {"v": x * reports}


def _previous() -> dict:
    """cost_model.json as it stands (the fit's figures, or the ceiling's), or nothing."""
    path = _common.RESULTS / "cost_model.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _cpu_per_trial(sampler: CpuSampler, t0: float, t1: float, trials: int) -> dict | None:
    """Between ``t0`` and ``t1`` (time.time()): CPU ms per trial of the kernel (and by thread), the scheduler and
    the workers, the cores each used, and the machine's other processes' cores; None for a span too short."""
    try:
        cpu = sampler.window(t0, t1, clock="time")
    except ValueError:
        return None
    span = cpu["wall_s"]
    ours = cpu["kernel_s"] + sum(cpu["groups_s"].values()) + cpu["threads_s"].get("benchmark", 0.0)
    used = {"kernel": cpu["kernel_s"], **cpu["groups_s"]}
    return {
        "cpu_window_s": span,
        "trials": trials,
        "cpu_ms_per_trial": {k: 1e3 * v / trials for k, v in used.items()} if trials else None,
        "kernel_thread_cpu_ms_per_trial": {
            role: 1e3 * v / trials for role, v in cpu["threads_s"].items() if role != "benchmark"
        }
        if trials
        else None,
        "cores": {k: v / span for k, v in used.items()} | {"machine": cpu["machine_s"] / span},
        "other_processes_cores": max(0.0, cpu["machine_s"] - ours) / span,
    }


def run_ceiling(trials: int, cluster: dict) -> dict:
    """The kernel's side, in a fresh process: hpo() pointed at the scheduler's address, as a user's would be."""
    from bench_scale_100k import _by_tenth
    from distributed import Client

    from jupyter_dist import space

    address, workers = cluster["address"], cluster["workers"]
    parallel = workers * CEILING_THREADS
    client = Client(address, set_as_default=False)  # the benchmark's own: the event counter, nothing else
    try:
        client.wait_for_workers(workers, timeout=120)
        run = {"parallel": parallel, "metric": "v", "pruner": None}
        warm = {"x": 0.5, "reports": CEILING_REPORTS}
        _runner.hpo(three_reports, warm, address, trials=CEILING_WARMUP * parallel, store=False, **run)
        client.register_plugin(EventCounter(), name=EVENT_COUNTER)
        sampler = CpuSampler(
            {"scheduler": [cluster["scheduler_pid"]], "workers": cluster["worker_pids"]}, CEILING_SAMPLE_S
        ).start()
        with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-ceiling-") as folder:
            store = os.path.join(folder, "experiments.sqlite")
            search = {"x": space.uniform(0, 1), "reports": CEILING_REPORTS}
            start = time.time()
            exp, wall = _runner.hpo(
                three_reports, search, address, trials=trials, seed=0, name="cost-model-ceiling",
                store=store, progress=False, **run,
            )  # fmt: skip
            sampler.stop()
            counts, reports = exp.counts(), exp.reports
            records = exp.trial_records()
        events = client.run_on_scheduler(_event_times)
        client.unregister_scheduler_plugin(EVENT_COUNTER)
    finally:
        client.close()
    ends = sorted(r.started + r.duration for r in records if r.duration is not None)
    if len(ends) < 20:
        raise RuntimeError(
            f"{len(records)} trial records, {len(ends)} ended, counts {counts}: too few to read"
        )
    tenths = _by_tenth(records, start)
    bounds = [start] + [ends[len(ends) * k // 10 - 1] for k in range(1, 11)]
    for tenth, t0, t1 in zip(tenths, bounds, bounds[1:], strict=False):
        tenth |= _cpu_per_trial(sampler, t0, t1, tenth["trials"]) or {}
    # the steady middle: from the 1st tenth's last end to the 9th's (the ramp and the tail left out)
    t0, t1 = bounds[1], bounds[9]
    middle_trials = sum(t0 < e <= t1 for e in ends)
    middle = _cpu_per_trial(sampler, t0, t1, middle_trials) or {}
    middle["trials_per_s"] = middle_trials / (t1 - t0) if t1 > t0 else None
    middle["events_per_trial"] = sum(t0 < e <= t1 for e in events) / middle_trials if middle_trials else None
    whole = _cpu_per_trial(sampler, start, time.time(), len(ends)) or {}
    per_s = [t["per_s"] for t in tenths if t.get("per_s")]
    return {
        "trials": trials,
        "parallel": parallel,
        "wall_s": wall,
        "trials_per_s": counts["completed"] / wall,
        "counts": counts,
        "reports": reports,
        "nothing_lost_or_doubled": counts["completed"] == trials and reports == trials * CEILING_REPORTS,
        "events": len(events),
        "events_per_trial": len(events) / trials,
        "middle": middle,
        "whole_run": whole,
        "by_tenth": tenths,
        "tenths_per_s_min_over_max": min(per_s) / max(per_s) if per_s else None,
    }


def _limits(middle: dict) -> dict:
    """The trials/s at which each process would fill one core, from its CPU per trial in the steady middle (the
    kernel by its busiest thread too: its Python threads share one interpreter lock), and which comes first."""
    ms = middle.get("cpu_ms_per_trial") or {}
    threads = middle.get("kernel_thread_cpu_ms_per_trial") or {}
    busiest = max(threads, key=threads.get) if threads else None
    out = {
        "kernel_trials_per_s_at_one_core": 1e3 / ms["kernel"] if ms.get("kernel") else None,
        "kernel_busiest_thread": busiest,
        "kernel_busiest_thread_trials_per_s_at_one_core": 1e3 / threads[busiest] if busiest else None,
        "scheduler_trials_per_s_at_one_core": 1e3 / ms["scheduler"] if ms.get("scheduler") else None,
        "workers_cpu_ms_per_trial": ms.get("workers"),
    }
    sides = {
        side: out[f"{side}_trials_per_s_at_one_core"]
        for side in ("kernel", "scheduler")
        if out[f"{side}_trials_per_s_at_one_core"]
    }
    first = min(sides, key=sides.get) if sides else None
    out["first_to_fill_a_core"] = first
    out["ceiling_trials_per_s"] = sides[first] if first else None
    return out


def measure_ceiling(workers: int, trials: int) -> dict:
    parameters = {
        "cluster": f"dask scheduler + {workers} x dask worker --no-nanny --nthreads {CEILING_THREADS} "
        f"--memory-limit {CEILING_MEMORY} on 127.0.0.1",
        "cluster_env": CLUSTER_ENV,
        "trials": trials,
        "reports_per_trial": CEILING_REPORTS,
        "run": f"hpo(three_reports, {{'x': space.uniform(0, 1), 'reports': {CEILING_REPORTS}}}, "
        f"cluster='tcp://127.0.0.1:<port>', trials={trials}, parallel={workers * CEILING_THREADS}, metric='v', "
        "sampler='random', pruner=None, seed=0, store=<fresh file>, progress=False) in a fresh kernel process, "
        f"after a warm-up hpo() of {CEILING_WARMUP} trials a worker, store off",
        "middle": "the 2nd to the 9th tenth of the trials by end time: CPU from /proc samples every "
        f"{CEILING_SAMPLE_S:g} s inside it",
        "one_core": "trials/s at one core = 1000 / CPU ms per trial of that process in the middle",
    }
    cluster = DaskProcessCluster(
        workers,
        CEILING_THREADS,
        CLUSTER_ENV,
        worker_args=("--memory-limit", CEILING_MEMORY, "--name", "bench-{i}", "--death-timeout", "60"),
    )
    with measuring("cost_model_ceiling", parameters) as result:
        result["before_start"] = wait_for_quiet()  # the machine's other processes, before ours start
        with _started(cluster, workers, CEILING_THREADS) as (info, cluster_file):
            print(f"  {trials:,} no-op trials x {CEILING_REPORTS} reports, one kernel...", flush=True)
            args = ["--ceiling", str(trials), "--point", "ceiling", "--cluster-file", cluster_file]
            ran = in_child(args, CEILING_TIMEOUT_S)
        result.update(cluster=info, run=ran, limits=_limits(ran["middle"]))
    return result


@contextlib.contextmanager
def _started(cluster: DaskProcessCluster, workers: int, threads: int) -> Iterator[tuple[dict, str]]:
    """Start ``cluster``, saying so; yield what ``start`` says of it and a file holding that, for the kernels in
    child processes (removed after). Once the block is done, the cluster's RSS then joins that; the cluster is
    closed however the block ends."""
    try:
        print(f"  starting dask scheduler + {workers} dask workers x {threads} threads...", flush=True)
        info = cluster.start(on_workers=_preimport)
        print(f"    up in {info['start_s']:.0f} s; RSS scheduler {info['rss_mb']['scheduler']:.0f} MB, "
              f"workers {info['rss_mb']['workers_total']:.0f} MB in all", flush=True)  # fmt: skip
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(info, f)
        try:
            yield info, f.name
        finally:
            os.unlink(f.name)
        info["rss_mb_at_end"] = cluster.rss_mb()
    finally:
        cluster.close()


def _judge(checked: list[dict], form: str) -> bool | None:
    """Whether the kernel's and the scheduler's ``form`` ("best_form" or "user_form") predictions held at every
    unsaturated held-out point; None when none was unsaturated."""
    judged = [e for e in checked if e["processes"] and not e["saturated"]]
    if not judged:
        return None
    return all(e["processes"][k][f"{form}_within_tolerance"] for e in judged for k in ("kernel", "scheduler"))


def _headline(fitted: dict) -> dict:
    """For 60 s trials at 1 and 10 reports/s: N* of the kernel and the scheduler (each by its best form), and
    which saturates first."""
    out = {}
    for r in (1, 10):
        key = f"{r:g}/s, 60 s trials"
        ns = {}
        for name in ("kernel", "scheduler"):
            m = fitted["by_process"][name]
            if m["best_form"] is not None:
                entry = m["saturation"][m["best_form"]]["trials_at_once_by_rate_and_length"][key]
                ns[name] = entry["trials_at_once"] if entry else None
        finite = {k: v for k, v in ns.items() if v is not None and v > 0}
        first = min(finite, key=finite.get) if finite else None
        out[key] = {
            "trials_at_once": ns,
            "first_to_saturate": first,
            "reports_per_s_then": finite[first] * r if first else None,
        }
    return out


if __name__ == "__main__":
    options = {
        "workers": WORKERS,
        "threads": THREADS,
        "point_seconds": (POINT_S, "each trial's length"),
        "ceiling": (0, "N: the ceiling run, N no-op trials on --workers x 1 thread, instead of the fit"),
    }
    quick = {"workers": 8, "threads": 16, "point_seconds": 10.0}
    # --point, --cluster-file: one point, in a child
    _runner.main("cost_model", main, options, quick=quick, child=("point", "cluster_file"))
