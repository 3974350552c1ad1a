"""The benchmarks' kernel-side helpers: machine info, statistics, CPU by process and thread, a Dask cluster of
processes, a Jupyter server, the JSON results (how a benchmark runs is _runner.py's; what runs on the workers,
_workloads.py's). The scripts import them as siblings: Python puts a script's own folder first on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import json
import os
import platform
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from importlib import metadata
from pathlib import Path
from typing import Any

# BENCH_RESULTS sends the JSON elsewhere (a smoke run at small sizes must not replace the measured figures).
DEFAULT_RESULTS = Path(__file__).resolve().parent / "results"
RESULTS = Path(os.environ.get("BENCH_RESULTS") or DEFAULT_RESULTS)
DASK = str(Path(sys.executable).with_name("dask"))  # the command, beside this Python
VERSIONS = ("jupyter_dist", "dask", "distributed", "optuna", "torch", "tornado", "ipywidgets", "plotly")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    model = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    return {
        "cpu_count": os.cpu_count(),
        "loadavg_1_5_15min": list(os.getloadavg()),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "cpu_model": model[1].strip() if model else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": {m: _version(m) for m in VERSIONS},
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between the closest ranks (numpy's default)."""
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else None


median = statistics.median


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def git_state() -> dict[str, Any]:
    """The commit measured, and whether the package's working tree differed from it (uncommitted changes)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.rstrip("\n") if out.returncode == 0 else None

    given = os.environ.get("BENCH_COMMIT")
    if given:  # a copied working tree (a lent GPU machine), whose .git may be missing or older than the files
        return {"commit": given, "package_uncommitted_changes": None}
    changed = git("status", "--porcelain", "--", "jupyter_dist")
    changed = None if changed is None else [line[3:] for line in changed.splitlines()]
    return {"commit": git("rev-parse", "HEAD"), "package_uncommitted_changes": changed}


def header(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "benchmark": name,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git": git_state(),
        "machine": machine_info(),
        "parameters": parameters,
    }


def _cpu_sample() -> tuple[float, int, int, int, float]:
    """(monotonic time, machine busy jiffies, machine total jiffies, steal jiffies, this process tree's CPU s)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    total = sum(values)
    t = os.times()
    ours = t.user + t.system + t.children_user + t.children_system
    return time.monotonic(), total - idle, total, values[7], ours


class CpuMonitor:
    """How much CPU other processes used while a benchmark ran (a test suite, a build): the machine's busy time
    (/proc/stat) minus this process's and its reaped children's (os.times()). Call ``stop()`` after the cluster
    is closed, so the worker processes are reaped and counted as ours."""

    def __init__(self) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.start = _cpu_sample()

    def stop(self, ours_cpu_s: float | None = None) -> dict[str, Any]:
        """``ours_cpu_s``: this benchmark's CPU seconds since ``__init__``, where the benchmark measured them
        itself (processes still running, or not its children); default: this process and its reaped children."""
        t1, busy1, _, steal1, ours1 = _cpu_sample()
        t0, busy0, _, steal0, ours0 = self.start
        wall = t1 - t0
        busy = (busy1 - busy0) / self.hz
        ours = ours1 - ours0 if ours_cpu_s is None else ours_cpu_s
        other = max(0.0, busy - ours)
        ncpu = os.cpu_count() or 1
        return {
            "wall_s": wall,
            "machine_busy_cpu_s": busy,
            "this_benchmark_cpu_s": ours,
            "other_processes_cpu_s": other,
            "other_share_of_capacity": other / (wall * ncpu) if wall else None,
            "steal_s": (steal1 - steal0) / self.hz,
            "loadavg_at_end": list(os.getloadavg()),
        }


# --- CPU by process and by thread, from /proc ----------------------------------------------------------------
def _stat_cpu_s(path: str) -> float | None:
    """user + system CPU seconds from a /proc/.../stat file; None when the process or thread is gone."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int | str = "self") -> float | None:
    """A process's CPU seconds (user + system, all its threads, living and ended); None when it is gone."""
    return _stat_cpu_s(f"/proc/{pid}/stat")


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has been busy since boot (all processes, every core)."""
    return _cpu_sample()[1] / os.sysconf("SC_CLK_TCK")


def descendants(pid: int | None = None) -> list[int]:
    """The pids of a process's children and their children (default: this process's)."""
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


# This process's threads, by what they do; the first prefix that matches a thread's name wins. In a kernel with an
# embedded LocalCluster, Dask's scheduler and the client share the "IO loop" thread (the client runs on the
# cluster's loop), so they cannot be told apart by thread: a benchmark that must separate them runs the scheduler
# as a process of its own (bench_cost_model).
THREAD_ROLES = (
    ("MainThread", "main"),
    ("IO loop", "io_loop"),
    ("jupyter_dist-store", "store_writer"),
    ("jupyter_dist-", "jupyter_dist_other"),
    ("Dask-", "dask_helpers"),
    ("bench-", "benchmark"),
)


def thread_cpu_s() -> dict[int, tuple[str, float]]:
    """This process's living threads: {native thread id: (role, CPU seconds)}; a thread's role from its Python
    name (``THREAD_ROLES``), or "other" for threads Python did not start or names no role."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {}
    for tid in map(int, os.listdir("/proc/self/task")):
        if (cpu := _stat_cpu_s(f"/proc/self/task/{tid}/stat")) is not None:
            name = names.get(tid) or ""
            out[tid] = (next((role for p, role in THREAD_ROLES if name.startswith(p)), "other"), cpu)
    return out


class CpuSampler:
    """CPU seconds of this process (in all and by thread role) and of ``groups`` of other processes ({name: pids},
    or a callable giving it at each sample), sampled every ``interval`` s and on ``sample()``, each sample stamped
    with ``time.monotonic()`` ("t") and ``time.time()`` ("time", the clock of trials and reports).

    ``window(t0, t1)``: the CPU each used between the first sample at or after ``t0`` and the last at or before
    ``t1`` (``clock="time"``: ``time.time()`` values). A thread born and ended between two samples counts in the
    process's total but in no role ("ended_between_samples"); the sampler's own thread ("benchmark") is left out
    of ``kernel_s``."""

    def __init__(self, groups: Any = None, interval: float = 0.5) -> None:
        self.groups = groups or {}
        self.interval = interval
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-cpu-sampler", daemon=True)

    def start(self) -> CpuSampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> dict[str, Any]:
        groups = self.groups() if callable(self.groups) else self.groups
        s = {
            "t": time.monotonic(),
            "time": time.time(),
            "process": process_cpu_s(),
            "threads": thread_cpu_s(),
            "groups": {name: {pid: process_cpu_s(pid) for pid in pids} for name, pids in groups.items()},
            "machine": machine_cpu_s(),
        }
        self.samples.append(s)
        return s

    def window(self, t0: float | None = None, t1: float | None = None, clock: str = "t") -> dict[str, Any]:
        inside = [
            s for s in self.samples if (t0 is None or s[clock] >= t0) and (t1 is None or s[clock] <= t1)
        ]
        if len(inside) < 2:
            raise ValueError(f"fewer than 2 CPU samples between {t0} and {t1}: sample more often")
        first, last = inside[0], inside[-1]
        roles: dict[str, float] = {}
        seen: dict[int, tuple[str, float]] = {}  # every thread's last value inside the window
        for s in inside:
            seen.update(s["threads"])
        for tid, (role, cpu) in seen.items():
            start = first["threads"].get(tid, (role, 0.0))[1]  # a thread born inside the window started at 0
            roles[role] = roles.get(role, 0.0) + cpu - start
        process = last["process"] - first["process"]
        roles["ended_between_samples"] = max(0.0, process - sum(roles.values()))
        groups: dict[str, float] = {}
        for name in last["groups"]:
            latest: dict[int, float] = {}  # a process that ended inside the window keeps its last value
            for s in inside:
                latest.update((pid, cpu) for pid, cpu in s["groups"].get(name, {}).items() if cpu is not None)
            before = first["groups"].get(name, {})
            groups[name] = sum(cpu - (before.get(pid) or 0.0) for pid, cpu in latest.items())
        return {
            "from": first["time"],
            "to": last["time"],
            "wall_s": last["t"] - first["t"],
            "process_s": process,
            "kernel_s": process - roles.get("benchmark", 0.0),
            "threads_s": roles,
            "groups_s": groups,
            "machine_s": last["machine"] - first["machine"],
        }


def least_squares(xs: list[list[float]], ys: list[float], names: tuple[str, ...]) -> dict[str, Any] | None:
    """Fit ``y = c0 + c1 x1 + ...`` by least squares: the coefficients by ``names`` (the intercept's first), R²,
    the residuals' RMS and the leave-one-out RMS (each row predicted by a fit without it: how well the form
    predicts a point it did not see); None with too few rows."""
    import numpy as np

    if len(ys) <= len(names) + 1:
        return None
    x = np.array([[1.0, *row] for row in xs])
    y = np.array(ys)
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    residual = y - x @ coef
    total = float(((y - y.mean()) ** 2).sum())
    loo = []
    for i in range(len(y)):
        keep = [j for j in range(len(y)) if j != i]
        loo.append(float(y[i] - x[i] @ np.linalg.lstsq(x[keep], y[keep], rcond=None)[0]))
    return {
        "coefficients": dict(zip(names, (float(c) for c in coef), strict=True)),
        "r2": 1 - float((residual**2).sum()) / total if total else None,
        "rms": float(np.sqrt((residual**2).mean())),
        "leave_one_out_rms": float(np.sqrt(np.mean(np.square(loo)))),
    }


# --- a Dask cluster of real processes ---------------------------------------------------------------------------
@contextlib.contextmanager
def glibc_malloc():
    """Without the MALLOC_* settings Dask's nanny put into ``os.environ``: the processes started meanwhile run with
    glibc's allocator defaults, as they would outside Dask."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("MALLOC_")}
    try:
        yield
    finally:
        os.environ.update(saved)


def die_with_parent() -> None:
    """A subprocess ``preexec_fn``: the kernel SIGTERMs the child when the process that started it ends, however
    it ends (Linux's PR_SET_PDEATHSIG), so a benchmark killed mid-run leaves no cluster behind."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class DaskProcessCluster:
    """``dask scheduler`` and ``workers`` x ``dask worker --no-nanny --nthreads threads`` on 127.0.0.1, each a
    process of its own (its CPU read apart), with ``env`` added to their environment and ``scheduler_args`` /
    ``worker_args`` (``{i}``: the worker's number) to their command lines. ``close()`` ends them (they also end
    with this process: ``die_with_parent``)."""

    def __init__(
        self,
        workers: int,
        threads: int,
        env: dict[str, str] | None = None,
        scheduler_args: tuple[str, ...] = ("--no-dashboard",),
        worker_args: tuple[str, ...] = tuple("--memory-limit 0 --name bench-{i} --death-timeout 60".split()),
    ) -> None:
        self.workers = workers
        self.threads = threads
        self.env = {**os.environ, **(env or {})}
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.scheduler_args, self.worker_args = scheduler_args, worker_args
        self.procs: list[subprocess.Popen] = []
        self._log = tempfile.TemporaryFile()

    def spawn(self, workers: int | None = None) -> None:
        """Start the scheduler (the first time) and ``workers`` more workers (default: all of them); no wait."""
        if not self.procs:
            port = self.address.rsplit(":", 1)[1]
            self._spawn([DASK, "scheduler", "--host", "127.0.0.1", "--port", port, *self.scheduler_args])
        first = len(self.procs) - 1
        for i in range(first, first + (self.workers if workers is None else workers)):
            worker = [DASK, "worker", self.address, "--nthreads", str(self.threads), "--no-nanny"]
            self._spawn([*worker, "--no-dashboard", *(a.format(i=i) for a in self.worker_args)])

    def start(self, on_workers=None) -> dict[str, Any]:
        """Start them, wait for every worker, then run ``on_workers`` on each (``Client.run``: e.g. imports that
        would otherwise land in each worker's first task) and let the start's CPU settle for 5 s."""
        import psutil
        from distributed import Client

        available = psutil.virtual_memory().available
        t0 = time.perf_counter()
        self.spawn()
        with Client(self.address, set_as_default=False, timeout=120) as client:
            client.wait_for_workers(self.workers, timeout=900)
            started = time.perf_counter() - t0
            if on_workers is not None:
                client.run(on_workers)
        time.sleep(5)
        return {
            "address": self.address,
            "workers": self.workers,
            "threads": self.threads,
            "scheduler_pid": self.procs[0].pid,
            "worker_pids": [p.pid for p in self.procs[1:]],
            "start_s": started,
            "rss_mb": self.rss_mb(),
            "available_memory_drop_mb": (available - psutil.virtual_memory().available) / 2**20,
        }

    def _spawn(self, cmd: list[str]) -> None:
        log = {"stdout": self._log, "stderr": self._log}
        self.procs.append(subprocess.Popen(cmd, env=self.env, preexec_fn=die_with_parent, **log))

    def rss_mb(self) -> dict[str, float]:
        import psutil

        rss = []
        for p in self.procs:
            try:
                rss.append(psutil.Process(p.pid).memory_info().rss)
            except psutil.NoSuchProcess:
                rss.append(0)
        return {"scheduler": rss[0] / 2**20, "workers_total": sum(rss[1:]) / 2**20}

    def close(self) -> None:
        for p in reversed(self.procs):  # the workers first, then the scheduler
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 30
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._log.close()


def machine_busy_share(seconds: float = 1.0) -> float:
    """Share of the machine's CPU capacity in use over ``seconds`` (by anything)."""
    _, busy0, total0, _, _ = _cpu_sample()
    time.sleep(seconds)
    _, busy1, total1, _, _ = _cpu_sample()
    return (busy1 - busy0) / max(1, total1 - total0)


def contention_note(cpu: dict[str, Any]) -> str:
    share = cpu.get("other_share_of_capacity") or 0.0
    flag = "  WARNING: other processes competed for the CPU; figures are pessimistic" if share > 0.05 else ""
    return f"  other processes used {share:.0%} of the machine's CPU during this run{flag}"


def wait_http(
    url: str, timeout: float = 60, process: subprocess.Popen | None = None, every: float = 0.2
) -> None:
    """Until ``url`` answers (the server behind it is up); the last error once ``timeout`` seconds have passed or
    ``process`` (the server's) has ended."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except OSError:
            if time.monotonic() > deadline or (process is not None and process.poll() is not None):
                raise
            time.sleep(every)


def get_json(url: str, token: str):
    """A Jupyter server's answer to a GET of ``url``, as JSON."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


@contextlib.contextmanager
def jupyter_server(app: str, root: str, store: str, *args: str):
    """A real ``jupyter server`` (app "jupyter_server") or JupyterLab ("jupyterlab") on 127.0.0.1 reading
    ``store``, started and stopped here; yields (base URL, token) once it answers."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from process_tools import stop_jupyter_server  # stopped as the tests stop theirs

    port = free_port()
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_DIST_STORE": store, "JUPYTER_TOKEN": token}
    options = [
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={root}",
    ]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen([sys.executable, "-m", app, *options, *args], env=env, **quiet)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/api/status?token={token}", 60, server)
        yield base, token
    finally:
        stop_jupyter_server(server)
