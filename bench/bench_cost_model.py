"""The cost model: kernel and scheduler CPU per trial and per report, fitted on a cluster of 64 worker processes.

The cluster: the real ``dask scheduler`` command as a process of its own and 64 ``dask worker --no-nanny``
processes of 16 threads each (1,024 slots), all on this machine, with the dask settings the README recommends
for a cluster of one's own (profiler off, 1 s tick, 2 s system monitor, 500 ms memory monitor, work stealing off;
Dask's own heartbeat, every 2 s at 64 workers). No worker imports torch (~100 MB each). Started once; every
measured point then runs in a fresh kernel process (this script as a child) that connects a ``Client`` to it and
runs one ``hpo()`` of ``_workloads.sleep_and_report`` trials (they sleep: the CPU they use is the bookkeeping's)
with the random sampler, ``pruner=None``, the store on (a fresh file per point) and a listener-only view
(``_common.CountingView``).

The points (full size; W = 64 workers, T = 16 threads):
  * ``idle``: the kernel connected, nothing running, 15 s: the cluster's fixed cost (heartbeats, ticks).
  * ``at_once``: N = W x {1, 2, 4, 8, 16} = 64 ... 1,024 trials at once, 1 report/s each, trials of 25 s.
  * ``report_rate``: N = 2W = 128 at once, {2, 5, 10} reports/s each, trials of 25 s.
  * ``churn``: N = 2W = 128 at once, trials that only sleep {8, 4, 2, 1} s (no report), 25 s of them (at
    least 4 rounds). Not shorter: jupyter_dist queues a trial ahead per slot for trials under 1 s, which on
    workers with more threads than the run's ``parallel`` start at once, so "at once" would no longer be N.
  * ``held_out``: two points chosen after the fit, inside the range it covers but unlike any point in it: N
    trials at once at 3 reports/s, N placing it at ~60% of the largest report rate fitted; and trials of 1.5 s,
    as many at once as give ~60% of the largest trial rate fitted. Not used in the fit; the check.
Each sweep runs from light to heavy and stops at its first saturated point (below).

Measured per point, over its steady window (long trials: from the last trial's start + 0.5 s to the first
trial's end - 0.5 s; churn: from the N-th start + 0.5 s to the last start - 0.5 s; idle: all of it), with
``_common.CpuSampler`` reading /proc every 0.5 s: CPU seconds per second (cores) of the kernel process (less the
sampler's own thread; also by thread: ``main`` is jupyter_dist's trial loop, ``io_loop`` the Dask client and
jupyter_dist's event handlers), the scheduler process, all worker processes, the whole machine, and others
(the machine less ours: the machine is shared); and the rates the window saw: trials ended per second, reports
delivered per second (the listener's arrivals), Dask events per second on the experiment's topic (counted by a
scheduler plugin's ``log_event`` hook: jupyter_dist sends reports, output and outcomes as events, so this is how
many messages the batching made of them), the mean trials running. Every trial's reports are checked (none lost
or doubled). A point is saturated (left out of the fit, and its sweep stops) when the kernel or the scheduler
used > 0.85 core, its processes used > 90% of the machine, reports arrived late (p99 > 2 s) or sleeping trials overran
(mean > nominal + 5%, at least 0.25 s): past that CPU no longer follows the load.

The model, fitted by least squares for each process p (kernel, scheduler, workers) over the unsaturated points:

    cpu_p / s = a_p + b_p * trials/s + c_p * reports/s [+ d_p * trials running] [+ e_p * events/s]

``a`` is the idle cost, ``b`` the CPU per trial (start to outcome), ``c`` per report, ``d`` per running trial per
second, ``e`` per Dask event. Four forms are fitted (``per_trial_per_report`` = a, b, c; ``+running``; ``per_event``
= a, b, e; ``+running+per_event``), each with R² and leave-one-out RMS error; the prediction uses the better of
the first two (those a user controls: trials, their length and their report rate), and the JSON says whether
events explain the CPU better than reports do (they do when the runtime batches several trials' reports into one
event). The prediction: N trials at once, each T seconds long reporting r times a second, load a process with
a + b N/T + c N r + d N cores; it saturates one core at

    N* = (1 - a) / (b/T + c r + d)

given for r in {0.1, 1, 10} reports/s and T in {10, 60, 600} s, for the kernel and the scheduler; the smaller is
the largest cluster one kernel drives. This 2-core machine saturates as a whole (kernel, scheduler and 64 workers
share its 2 cores) before any one process reaches a core: N* is the fitted line extended, checked at the held-out
points (predicted vs measured cores per process).

Run: ``.venv/bin/python bench/bench_cost_model.py`` (~15 min, writes bench/results/cost_model.json; watch memory:
64 workers ~6 GB). ``--quick``: 8 workers, points of 10 s (smoke); ``--workers``, ``--threads``,
``--point-seconds`` set them.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from _common import (
    CountingView,
    CpuSampler,
    free_port,
    header,
    percentile,
    write_result,
)
from _workloads import sleep_and_report
from distributed.diagnostics.plugin import SchedulerPlugin

WORKERS = 64
THREADS = 16
POINT_S = 25.0
IDLE_S = 15.0
QUICK = {"workers": 8, "threads": 16, "point_seconds": 10.0}
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


# --- one point, in a fresh kernel process -------------------------------------------------------------------
def run_point(point: Point, cluster: dict) -> dict:
    from distributed import Client

    import jupyter_dist
    from jupyter_dist import space

    client = Client(cluster["address"], set_as_default=False)
    try:
        client.wait_for_workers(cluster["workers"], timeout=120)
        # The kernel's own first experiment (imports, connections), outside the measurement.
        jupyter_dist.hpo(
            sleep_and_report,
            {"x": 0.5, "seconds": 0.01, "rate": 1},
            trials=8,
            parallel=8,
            metric="v",
            sampler="random",
            pruner=None,
            cluster=client,
            progress=False,
            store=False,
        )
        client.register_plugin(EventCounter(), name=EVENT_COUNTER)
        groups = {"scheduler": [cluster["scheduler_pid"]], "workers": cluster["worker_pids"]}
        sampler = CpuSampler(groups, interval=0.5).start()
        exp = None
        with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-cost-model-") as folder:
            t0 = time.perf_counter()
            if point.kind == "idle":
                time.sleep(point.seconds)
            else:
                exp = jupyter_dist.hpo(
                    sleep_and_report,
                    {"x": space.uniform(0, 1), "seconds": point.seconds, "rate": point.rate},
                    trials=point.trials,
                    parallel=point.at_once,
                    metric="v",
                    sampler="random",
                    pruner=None,
                    seed=0,
                    name="cost-model",
                    cluster=client,
                    progress=CountingView,
                    store=os.path.join(folder, "experiments.sqlite"),
                )
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
        view = CountingView.last
        starts = sorted(r.started for r in records)
        ends = sorted(r.started + (r.duration or 0.0) for r in records)
        if point.kind == "long":
            t0, t1 = starts[-1] + 0.5, ends[0] - 0.5
        else:
            t0, t1 = starts[min(point.at_once, len(starts)) - 1] + 0.5, starts[-1] - 0.5
        try:
            cpu = sampler.window(t0, t1, clock="time")
        except ValueError:
            return dict(
                out, error=f"no steady window: the trials never ran {point.at_once} at once long enough"
            )
    t0, t1, span = cpu["from"], cpu["to"], cpu["wall_s"]
    ncpu = os.cpu_count() or 1
    ours = cpu["kernel_s"] + cpu["groups_s"]["scheduler"] + cpu["groups_s"]["workers"]
    cores = {
        "kernel": cpu["kernel_s"] / span,
        "scheduler": cpu["groups_s"]["scheduler"] / span,
        "workers": cpu["groups_s"]["workers"] / span,
        "machine": cpu["machine_s"] / span,
        "others": max(0.0, cpu["machine_s"] - ours - cpu["threads_s"].get("benchmark", 0.0)) / span,
    }
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
    window_latency = (
        [] if view is None else view.latency
    )  # whole run's: the window's alone are not kept apart
    reasons = []
    if cores["kernel"] > SATURATED_CORE:
        reasons.append(f"kernel {cores['kernel']:.2f} cores")
    if cores["scheduler"] > SATURATED_CORE:
        reasons.append(f"scheduler {cores['scheduler']:.2f} cores")
    if (cores["machine"] - cores["others"]) > SATURATED_MACHINE * ncpu:
        reasons.append(
            f"this benchmark used {(cores['machine'] - cores['others']) / ncpu:.0%} of the machine"
        )
    p99 = percentile(window_latency, 99)
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
        latency_s=view.latency_s() if view else None,
        trial_duration_s={"nominal": point.seconds, "mean": mean},
        counts=exp.counts() if exp is not None else None,
        saturated=reasons,
    )
    return out


# --- the cluster ----------------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """In a child process before it runs: SIGTERM it when this benchmark's process ends, however it ends."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Cluster:
    """``dask scheduler`` and ``workers`` x ``dask worker --no-nanny --nthreads threads`` processes on 127.0.0.1,
    closed on every path (``close()``; each is also SIGTERMed by the kernel if this process dies)."""

    def __init__(self, workers: int, threads: int) -> None:
        self.workers = workers
        self.threads = threads
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.procs: list[subprocess.Popen] = []
        self.log = tempfile.TemporaryFile()

    def start(self) -> dict:
        import psutil
        from distributed import Client

        dask = str(Path(sys.executable).with_name("dask"))
        env = {**os.environ, **CLUSTER_ENV}
        t0 = time.perf_counter()
        available0 = psutil.virtual_memory().available
        port = self.address.rsplit(":", 1)[1]
        self._spawn([dask, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"], env)
        for i in range(self.workers):
            cmd = [
                dask,
                "worker",
                self.address,
                "--nthreads",
                str(self.threads),
                "--no-nanny",
                "--no-dashboard",
            ]
            self._spawn(
                cmd + ["--memory-limit", "0", "--name", f"cost-model-{i}", "--death-timeout", "60"], env
            )
        with Client(self.address, set_as_default=False, timeout=120) as client:
            client.wait_for_workers(self.workers, timeout=900)
            started = time.perf_counter() - t0
            time.sleep(5)  # let the start's CPU settle before the first point
        rss = [psutil.Process(p.pid).memory_info().rss for p in self.procs]
        return {
            "address": self.address,
            "workers": self.workers,
            "threads": self.threads,
            "scheduler_pid": self.procs[0].pid,
            "worker_pids": [p.pid for p in self.procs[1:]],
            "start_s": started,
            "rss_mb": {"scheduler": rss[0] / 2**20, "workers_total": sum(rss[1:]) / 2**20},
            "available_memory_drop_mb": (available0 - psutil.virtual_memory().available) / 2**20,
        }

    def _spawn(self, cmd: list[str], env: dict) -> None:
        self.procs.append(
            subprocess.Popen(cmd, env=env, stdout=self.log, stderr=self.log, preexec_fn=_die_with_parent)
        )

    def close(self) -> None:
        for p in reversed(self.procs):  # workers first, then the scheduler
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 30
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


# --- the fit ---------------------------------------------------------------------------------------------------
MODELS = {
    "per_trial_per_report": ("trials_per_s", "reports_per_s"),
    "per_trial_per_report+running": ("trials_per_s", "reports_per_s", "running"),
    "per_trial_per_event": ("trials_per_s", "events_per_s"),
    "per_trial_per_report+running+per_event": ("trials_per_s", "reports_per_s", "running", "events_per_s"),
}
USER_MODELS = ("per_trial_per_report", "per_trial_per_report+running")
PROCESSES = ("kernel", "scheduler", "workers")


def fit(points: list[dict], features: tuple[str, ...], process: str) -> dict | None:
    import numpy as np

    if len(points) <= len(features) + 1:
        return None
    x = np.array([[1.0] + [p["rates"][f] for f in features] for p in points])
    y = np.array([p["cores"][process] for p in points])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    residual = y - x @ coef
    total = float(((y - y.mean()) ** 2).sum())
    loo = []
    for i in range(len(points)):
        keep = [j for j in range(len(points)) if j != i]
        c = np.linalg.lstsq(x[keep], y[keep], rcond=None)[0]
        loo.append(float(y[i] - x[i] @ c))
    return {
        "coefficients": dict(zip(("idle_cores", *features), (float(c) for c in coef), strict=True)),
        "r2": 1 - float((residual**2).sum()) / total if total else None,
        "rms_cores": float(np.sqrt((residual**2).mean())),
        "leave_one_out_rms_cores": float(np.sqrt(np.mean(np.square(loo)))),
    }


def predict(coefficients: dict, rates: dict) -> float:
    return coefficients["idle_cores"] + sum(
        c * rates[f] for f, c in coefficients.items() if f != "idle_cores"
    )


def saturation(coefficients: dict) -> dict:
    """N* = (1 - a) / (b/T + c r + d): trials at once that load the process with one core."""
    a = coefficients["idle_cores"]
    b = coefficients.get("trials_per_s", 0.0)
    c = coefficients.get("reports_per_s", 0.0)
    d = coefficients.get("running", 0.0)
    table = {}
    for r in PREDICT_RATES:
        for t in PREDICT_SECONDS:
            per_trial = b / t + c * r + d
            n = (1 - a) / per_trial if per_trial > 0 else None
            table[f"{r:g}/s, {t} s trials"] = {
                "trials_at_once": n,
                "reports_per_s": n * r if n is not None else None,
                "trials_per_s": n / t if n is not None else None,
            }
    return {
        "trials_at_once_by_rate_and_length": table,
        "reports_per_s_alone": (1 - a) / c if c > 0 else None,  # long trials, nothing else
        "trials_per_s_alone": (1 - a) / b if b > 0 else None,  # trials that do not report
    }


def model(points: list[dict]) -> dict:
    fitted = [
        p for p in points if not p.get("saturated") and "error" not in p and p["point"]["sweep"] != "held_out"
    ]
    out: dict = {"points_fitted": [p["label"] for p in fitted], "by_process": {}}
    for process in PROCESSES:
        fits = {name: fit(fitted, features, process) for name, features in MODELS.items()}
        usable = {name: fits[name] for name in USER_MODELS if fits[name]}
        chosen = min(usable, key=lambda n: usable[n]["leave_one_out_rms_cores"]) if usable else None
        events_better = None
        if fits["per_trial_per_event"] and fits["per_trial_per_report"]:
            events_better = (
                fits["per_trial_per_event"]["leave_one_out_rms_cores"]
                < fits["per_trial_per_report"]["leave_one_out_rms_cores"]
            )
        out["by_process"][process] = {
            "fits": fits,
            "chosen": chosen,
            "events_explain_better_than_reports": events_better,
            "saturation": saturation(fits[chosen]["coefficients"]) if chosen else None,
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


def check(points: list[dict], fitted: dict) -> list[dict]:
    out = []
    for p in points:
        if p["point"]["sweep"] != "held_out":
            continue
        entry = {
            "label": p["label"],
            "saturated": p.get("saturated"),
            "error": p.get("error"),
            "processes": {},
        }
        for process in PROCESSES:
            chosen = fitted["by_process"][process]["chosen"]
            if chosen is None or "error" in p:
                continue
            predicted = predict(fitted["by_process"][process]["fits"][chosen]["coefficients"], p["rates"])
            measured = p["cores"][process]
            error = predicted - measured
            entry["processes"][process] = {
                "predicted_cores": predicted,
                "measured_cores": measured,
                "error_cores": error,
                "relative_error": error / measured if measured else None,
                "within_tolerance": abs(error) <= TOLERANCE["cores"]
                or (measured > 0 and abs(error) / measured <= TOLERANCE["relative"]),
            }
        out.append(entry)
    return out


# --- the parent -------------------------------------------------------------------------------------------------
def _child(point: Point, cluster_file: str) -> dict:
    cmd = [sys.executable, __file__, "--point", json.dumps(asdict(point)), "--cluster-file", cluster_file]
    timeout = 4 * point.seconds + 300
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=_die_with_parent
        )
    except subprocess.TimeoutExpired as e:
        return {"point": asdict(point), "label": point.label, "error": f"timed out after {timeout:.0f} s",
                "stderr": str(e.stderr)[-3000:]}  # fmt: skip
    if done.returncode:
        return {"point": asdict(point), "label": point.label, "error": f"exit {done.returncode}",
                "stderr": done.stderr[-3000:]}  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run(point: Point, cluster_file: str, points: list[dict]) -> dict:
    print(f"  {point.sweep}: {point.label}...", flush=True)
    res = _child(point, cluster_file)
    points.append(res)
    print(_line(res), flush=True)
    return res


def main(workers: int, threads: int, seconds: float) -> dict:
    wall0 = time.perf_counter()
    cluster = Cluster(workers, threads)
    points: list[dict] = []
    try:
        print(
            f"  starting dask scheduler + {workers} dask worker processes x {threads} threads...", flush=True
        )
        info = cluster.start()
        print(f"    up in {info['start_s']:.0f} s; RSS scheduler {info['rss_mb']['scheduler']:.0f} MB, "
              f"workers {info['rss_mb']['workers_total']:.0f} MB in all", flush=True)  # fmt: skip
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(info, f)
        try:
            for sweep in sweeps(workers, threads, seconds).values():
                for point in sweep:
                    res = _run(point, f.name, points)
                    if res.get("saturated") or "error" in res:
                        break  # heavier points of this sweep would be saturated too
            for point in held_out_points(points, workers, threads, seconds):
                _run(point, f.name, points)
        finally:
            os.unlink(f.name)
        info["rss_mb_at_end"] = _rss_mb(cluster)
    finally:
        cluster.close()
    fitted = model(points)
    checked = check(points, fitted)
    result = header(
        "cost_model",
        {
            "cluster": f"dask scheduler + {workers} x dask worker --no-nanny --nthreads {threads} on 127.0.0.1",
            "cluster_env": CLUSTER_ENV,
            "point_seconds": seconds,
            "run": "hpo(sleep_and_report, {'x': space.uniform(0, 1), 'seconds': S, 'rate': R}, trials=, "
            "parallel=N, metric='v', sampler='random', pruner=None, seed=0, progress=CountingView, "
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
    kernel = fitted["by_process"]["kernel"]
    scheduler = fitted["by_process"]["scheduler"]
    result.update(
        cluster=info,
        points=points,
        model=fitted,
        held_out_check=checked,
        largest_cluster_one_kernel_drives=_headline(kernel, scheduler),
        all_within_tolerance=_judge(checked),
        wall_s=time.perf_counter() - wall0,
    )
    return result


def _judge(checked: list[dict]) -> bool | None:
    """Whether the kernel's and the scheduler's predictions held at every unsaturated held-out point; None when
    none was unsaturated."""
    judged = [e for e in checked if e["processes"] and not e["saturated"]]
    if not judged:
        return None
    return all(v["within_tolerance"] for e in judged for k, v in e["processes"].items() if k != "workers")


def _rss_mb(cluster: Cluster) -> dict:
    import psutil

    rss = []
    for p in cluster.procs:
        try:
            rss.append(psutil.Process(p.pid).memory_info().rss)
        except psutil.NoSuchProcess:
            rss.append(0)
    return {"scheduler": rss[0] / 2**20, "workers_total": sum(rss[1:]) / 2**20}


def _headline(kernel: dict, scheduler: dict) -> dict:
    """For 60 s trials at 1 and 10 reports/s: N* of each process, and which saturates first."""
    out = {}
    for r in (1, 10):
        key = f"{r:g}/s, 60 s trials"
        ns = {}
        for name, fitted in (("kernel", kernel), ("scheduler", scheduler)):
            if fitted["saturation"]:
                ns[name] = fitted["saturation"]["trials_at_once_by_rate_and_length"][key]["trials_at_once"]
        finite = {k: v for k, v in ns.items() if v is not None and v > 0}
        first = min(finite, key=finite.get) if finite else None
        out[key] = {
            "trials_at_once": ns,
            "first_to_saturate": first,
            "reports_per_s_then": finite[first] * r if first else None,
        }
    return out


def _line(res: dict) -> str:
    if "error" in res:
        return f"    FAILED ({res['error']}): {res.get('stderr', '')[-600:]}"
    c, r = res["cores"], res["rates"]
    flag = f"  SATURATED: {', '.join(res['saturated'])}" if res["saturated"] else ""
    check = res.get("reports_check")
    lost = f", lost {check['lost']} doubled {check['doubled']}" if check else ""
    return (
        f"    {res['window']['seconds']:.1f} s window: {r['trials_per_s']:.1f} trials/s, {r['reports_per_s']:.0f} "
        f"reports/s, {r['events_per_s']:.0f} events/s, {r['running']:.0f} running{lost}; cores: kernel "
        f"{c['kernel']:.3f}, scheduler {c['scheduler']:.3f}, workers {c['workers']:.3f}, others "
        f"{c['others']:.2f}{flag}"
    )


def summary(result: dict) -> str:
    lines = [f"cost model on {result['parameters']['cluster']}:"]
    for p in result["points"]:
        lines += [f"  {p['point']['sweep']}: {p['label']}", _line(p)]
    for process, m in result["model"]["by_process"].items():
        if not m["chosen"]:
            lines.append(f"  {process}: too few unsaturated points to fit")
            continue
        f = m["fits"][m["chosen"]]
        coef = ", ".join(
            f"{k} {v * 1e3:.3f} m" if k != "idle_cores" else f"idle {v:.3f}"
            for k, v in f["coefficients"].items()
        )
        lines.append(
            f"  {process} ({m['chosen']}): {coef} cores per unit; R² {f['r2']:.3f}, LOO RMS "
            f"{f['leave_one_out_rms_cores']:.3f} cores; events explain better: {m['events_explain_better_than_reports']}"
        )
    for key, h in result["largest_cluster_one_kernel_drives"].items():
        ns = ", ".join(f"{k} {v:,.0f}" if v else f"{k} -" for k, v in h["trials_at_once"].items())
        lines.append(f"  one core saturated at {key}: trials at once {ns}; first: {h['first_to_saturate']}")
    for e in result["held_out_check"]:
        parts = ", ".join(
            f"{k} {v['predicted_cores']:.3f} predicted / {v['measured_cores']:.3f} measured"
            for k, v in e["processes"].items()
        )
        lines.append(f"  held out {e['label']}: {parts}{' (SATURATED)' if e['saturated'] else ''}")
    lines.append(f"  held-out checks within tolerance (kernel, scheduler): {result['all_within_tolerance']}")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument(
        "--point-seconds", type=float, default=POINT_S, help="each point's trial length / span"
    )
    parser.add_argument("--quick", action="store_true", help=f"smoke sizes: {QUICK}")
    parser.add_argument("--point", help=argparse.SUPPRESS)  # one point, in a child process
    parser.add_argument("--cluster-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        cluster_info = json.loads(Path(args.cluster_file).read_text())
        print(json.dumps(run_point(Point(**json.loads(args.point)), cluster_info)))
    else:
        sizes = dict(QUICK) if args.quick else {}
        sizes = {
            "workers": args.workers,
            "threads": args.threads,
            "point_seconds": args.point_seconds,
            **sizes,
        }
        res = main(sizes["workers"], sizes["threads"], sizes["point_seconds"])
        path = write_result("cost_model", res)
        print(summary(res))
        print(f"  -> {path}")
