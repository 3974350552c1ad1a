"""Shared helpers of the benchmarks: machine info, statistics, writing the JSON results.

Only the kernel side uses these; a worker cannot import this module by name. What runs on the workers is in each
benchmark script (``__main__``, which cloudpickle ships by value) or, when several benchmarks run it, in
_workloads.py. The scripts import both as their siblings: Python puts a script's own folder first on
``sys.path``, so ``python bench/bench_x.py`` needs no path set-up.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

# BENCH_RESULTS sends the JSON elsewhere (a smoke run at small sizes must not replace the measured figures).
RESULTS = Path(os.environ.get("BENCH_RESULTS") or Path(__file__).resolve().parent / "results")


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "loadavg_1_5_15min": load,
        "cpu_affinity": affinity,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": {
            m: _version(m)
            for m in (
                "jupyter_dist",
                "dask",
                "distributed",
                "optuna",
                "torch",
                "tornado",
                "ipywidgets",
                "plotly",
            )
        },
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between the closest ranks."""
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return statistics.median(values)


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")
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

    changed = git("status", "--porcelain", "--", "jupyter_dist")
    return {
        "commit": git("rev-parse", "HEAD"),
        "package_uncommitted_changes": None
        if changed is None
        else [line[3:] for line in changed.splitlines()],
    }


def header(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "benchmark": name,
        "timestamp": now_iso(),
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
    """How much CPU other processes used while a benchmark ran (another test suite, a build...).

    Machine-wide busy time (/proc/stat) minus this process's and its reaped children's CPU time (os.times()):
    call ``stop()`` after the cluster is closed, so the worker processes are reaped and counted as ours.
    """

    def __init__(self) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.start = _cpu_sample()

    def stop(self) -> dict[str, Any]:
        t1, busy1, _total1, steal1, ours1 = _cpu_sample()
        t0, busy0, _total0, steal0, ours0 = self.start
        wall = t1 - t0
        busy = (busy1 - busy0) / self.hz
        ours = ours1 - ours0
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


@contextlib.contextmanager
def jupyter_server(app: str, root: str, store: str, *args: str):
    """A real ``jupyter server`` (app "jupyter_server") or JupyterLab ("jupyterlab") on 127.0.0.1 reading
    ``store``, started and stopped here; yields (base URL, token) once it answers."""
    port = free_port()
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_DIST_STORE": store, "JUPYTER_TOKEN": token}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={root}",
            *args,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield base, token
    finally:
        server.terminate()
        server.wait(30)
