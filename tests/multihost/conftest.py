"""Several "hosts" on one machine (tests/namespaces.py): a `dask scheduler` runs in one network namespace, a
`dask worker` in each of two others, and the experiment's client (the kernel's side) in a fourth.

Each namespace's hostname still resolves to 127.0.0.1 (/etc/hosts is shared): exactly the situation where gloo,
left alone, advertises an address the other hosts cannot reach.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from namespaces import Network, can_make_namespaces
from process_tools import stop

DASK = str(Path(sys.executable).with_name("dask"))
HOSTS = ("sched", "w1", "w2", "client")
SCHEDULER_PORT = 8786
WORKER_TTL = "6s"
COMM_TIMEOUT = "15s"


@dataclass(kw_only=True)
class Hosts(Network):
    names: tuple[str, ...] = HOSTS
    logs: Path
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)  # host -> its `dask worker` process

    @property
    def scheduler(self) -> str:
        return f"tcp://{self.address('sched')}:{SCHEDULER_PORT}"

    def start_worker(self, host: str) -> subprocess.Popen:
        command = [DASK, "worker", self.scheduler, "--host", self.address(host), "--name", host]
        command += ["--nthreads", "1", "--no-dashboard"]
        return self.popen(host, command, self.logs / f"{host}.log")

    def replace_worker(self, host: str) -> None:
        """A new worker process on ``host`` (the one cut off was given up by the scheduler and stays out)."""
        stop(self.workers[host])
        self.workers[host] = self.start_worker(host)

    def run_client_cutting(self, script: str, host: str, timeout: float = 240) -> tuple[str, str]:
        """Run ``script`` on the client host; when it prints "CUT" and waits for a line on stdin, cut ``host``'s
        link and let it go on. Its (stdout, stderr) once it ends; the link is mended and the host's worker, which
        the scheduler gave up on, replaced."""
        client = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace("client"), sys.executable, "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "JUPYTER_DIST_SCHEDULER": self.scheduler},
        )
        try:
            assert client.stdout.readline().strip() == "CUT", client.stderr.read()[-4000:]
            self.set_link(host, "down")
            client.stdin.write("\n")
            client.stdin.flush()
            out, err = client.communicate(timeout=timeout)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
            self.set_link(host, "up")
            self.replace_worker(host)
        assert client.returncode == 0, err[-4000:]
        return out, err

    def run_client(self, script: str, timeout: float = 300) -> dict:
        """Run ``script`` (Python printing one JSON line last) on the client host; what it printed."""
        done = subprocess.run(
            ["ip", "netns", "exec", self.namespace("client"), sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "JUPYTER_DIST_SCHEDULER": self.scheduler},
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Four namespaces on a bridge, a scheduler on "sched" and a one-thread worker on "w1" and on "w2"."""
    if not can_make_namespaces():
        pytest.fail("the multi-host tests make network namespaces: they need root and iproute2 (`ip`)")
    logs = tmp_path_factory.mktemp("hosts")
    hosts = Hosts(logs=logs)
    hosts.make()
    processes = []
    try:
        sched = hosts.address("sched")
        processes.append(
            hosts.popen(
                "sched",
                [
                    DASK,
                    "scheduler",
                    "--host",
                    sched,
                    "--port",
                    str(SCHEDULER_PORT),
                    "--dashboard-address",
                    ":0",
                ],
                logs / "scheduler.log",
                # A host that goes silent (its link cut) is given up after this, not Dask's default 5 minutes:
                # the setting an admin chooses for how long a lost host may hold trials (README, Several hosts).
                # Past it, the scheduler tries the host's nanny, and drops the host when that try times out: 15 s
                # here (Dask refuses less than 11), not its 30 s, which every cut-link test would otherwise wait out.
                env={
                    **os.environ,
                    "DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": WORKER_TTL,
                    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": COMM_TIMEOUT,
                    "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": COMM_TIMEOUT,
                },
            )
        )
        hosts.workers = {worker: hosts.start_worker(worker) for worker in ("w1", "w2")}
        yield hosts
    finally:
        for process in [*hosts.workers.values(), *reversed(processes)]:
            stop(process)  # only the processes this test started, by their PID
        hosts.remove()
