"""Real Dask processes for the runtime tests: a `dask scheduler` and `dask worker`s on 127.0.0.1, started by the
test and stopped by it (by their PID), and how many intervals overlap at most."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from process_tools import stop

import jupyter_dist as jd
from jupyter_dist.cluster import forget_cluster

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
    scheduler_env: dict[str, str] | None = None,
    worker_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """The scheduler's address while a scheduler and one `dask worker` per entry of ``workers`` (each its extra
    arguments) run. ``connect(address)``: the client that waits for the workers (default: jupyter_dist's own,
    cached, closed at the end). ``scheduler_env`` / ``worker_env``: their processes' environment variables."""
    port = free_port()
    address = f"{protocol}://127.0.0.1:{port}"
    scheduler = [DASK, "scheduler", "--protocol", protocol, "--host", "127.0.0.1", "--port", str(port)]
    scheduler += ["--dashboard-address", ":0"]
    procs = [subprocess.Popen([*scheduler, *scheduler_args], env=scheduler_env, **QUIET)]
    for extra in workers:
        worker = [DASK, "worker", address, "--no-dashboard", *extra]
        procs.append(subprocess.Popen(worker, env=worker_env, **QUIET))
    try:
        _wait_for_port(port, procs[0])
        client = connect(address)
        if workers:
            client.wait_for_workers(len(workers), timeout=60)
        yield address
    finally:
        forget_cluster(address)
        for proc in reversed(procs):  # only the processes this test started, by their PID
            stop(proc)


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    """Until the scheduler listens: on a loaded machine it can take longer to start than a client waits to
    connect (5 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the scheduler did not listen on port {port} within {timeout:.0f}s")


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most (start, end) intervals that overlap at one moment."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most
