"""Real Dask processes for the runtime tests: a `dask scheduler` and `dask worker`s on 127.0.0.1, started by the
test and stopped by it (by their PID), and how many intervals overlap at most."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

from process_tools import stop

import jupyter_dist as jd
from jupyter_dist.runtime import _cluster

DASK = os.path.join(os.path.dirname(sys.executable), "dask")
QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dask_cluster(
    workers: list[list[str]],
    *,
    protocol: str = "tcp",
    scheduler_args: tuple[str, ...] | list[str] = (),
    connect=jd.get_client,
) -> Iterator[str]:
    """The scheduler's address while a scheduler and one `dask worker` per entry of ``workers`` (each its extra
    arguments) run. ``connect(address)``: the client that waits for the workers (default: jupyter_dist's own,
    cached, closed at the end)."""
    port = free_port()
    address = f"{protocol}://127.0.0.1:{port}"
    scheduler = [DASK, "scheduler", "--protocol", protocol, "--host", "127.0.0.1", "--port", str(port)]
    scheduler += ["--dashboard-address", ":0"]
    procs = [subprocess.Popen([*scheduler, *scheduler_args], **QUIET)]
    for extra in workers:
        procs.append(subprocess.Popen([DASK, "worker", address, "--no-dashboard", *extra], **QUIET))
    try:
        connect(address).wait_for_workers(len(workers), timeout=60)
        yield address
    finally:
        cached = _cluster._remote.pop(address, None)
        if cached is not None:
            cached.close()
        for proc in reversed(procs):  # only the processes this test started, by their PID
            stop(proc)


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most (start, end) intervals that overlap at one moment."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most
