"""Several "hosts" on one machine: network namespaces with their own addresses on a bridge (iproute2, veth pairs),
made and removed by the test; no traffic leaves the machine. A `dask scheduler` runs in one namespace, a
`dask worker` in each of two others, and the experiment's client (the kernel's side) in a fourth.

Each namespace's hostname still resolves to 127.0.0.1 (/etc/hosts is shared): exactly the situation where gloo,
left alone, advertises an address the other hosts cannot reach.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from process_tools import stop

DASK = str(Path(sys.executable).with_name("dask"))
HOSTS = ("sched", "w1", "w2", "client")
SCHEDULER_PORT = 8786
WORKER_TTL = "6s"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Hosts:
    prefix: str
    subnet: str  # "10.231.N" (the hosts are .1 .. .4, in HOSTS order)
    logs: Path
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)  # host -> its `dask worker` process

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def address(self, host: str) -> str:
        return f"{self.subnet}.{HOSTS.index(host) + 1}"

    def link(self, host: str) -> str:
        """The host's network interface, inside its namespace."""
        return f"{self.prefix}p{HOSTS.index(host)}"

    @property
    def scheduler(self) -> str:
        return f"tcp://{self.address('sched')}:{SCHEDULER_PORT}"

    def popen(self, host: str, command: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
        # `ip netns exec` execs the command: the Popen's pid is the command's own, which the test stops.
        with open(log, "wb") as out:
            return subprocess.Popen(
                ["ip", "netns", "exec", self.namespace(host), *command],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def start_worker(self, host: str) -> subprocess.Popen:
        command = [DASK, "worker", self.scheduler, "--host", self.address(host), "--name", host]
        command += ["--nthreads", "1", "--no-dashboard"]
        return self.popen(host, command, self.logs / f"{host}.log")

    def replace_worker(self, host: str) -> None:
        """A new worker process on ``host`` (the one cut off was given up by the scheduler and stays out)."""
        stop(self.workers[host])
        self.workers[host] = self.start_worker(host)

    def set_link(self, host: str, state: str) -> None:
        """Cut ("down") or mend ("up") the host's network link."""
        ip("-n", self.namespace(host), "link", "set", self.link(host), state)

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


def _make_namespaces(hosts: Hosts) -> None:
    bridge = f"{hosts.prefix}br"
    ip("link", "add", bridge, "type", "bridge")
    ip("link", "set", bridge, "up")
    for i, host in enumerate(HOSTS):
        ns, outside, inside = hosts.namespace(host), f"{hosts.prefix}v{i}", hosts.link(host)
        ip("netns", "add", ns)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", ns)
        ip("link", "set", outside, "master", bridge)
        ip("link", "set", outside, "up")
        ip("-n", ns, "addr", "add", f"{hosts.address(host)}/24", "dev", inside)
        ip("-n", ns, "link", "set", inside, "up")
        ip("-n", ns, "link", "set", "lo", "up")


def _remove_namespaces(hosts: Hosts) -> None:
    for host in HOSTS:  # a namespace takes its end of the veth pair with it, and the pair goes
        subprocess.run(["ip", "netns", "del", hosts.namespace(host)], capture_output=True)
    subprocess.run(["ip", "link", "del", f"{hosts.prefix}br"], capture_output=True)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Four namespaces on a bridge, a scheduler on "sched" and a one-thread worker on "w1" and on "w2"."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.fail("the multi-host tests make network namespaces: they need root and iproute2 (`ip`)")
    logs = tmp_path_factory.mktemp("hosts")
    hosts = Hosts(prefix=f"jd{os.getpid() % 100000}", subnet=f"10.231.{random.randrange(1, 254)}", logs=logs)
    _make_namespaces(hosts)
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
                env={**os.environ, "DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": WORKER_TTL},
            )
        )
        hosts.workers = {worker: hosts.start_worker(worker) for worker in ("w1", "w2")}
        yield hosts
    finally:
        for process in [*hosts.workers.values(), *reversed(processes)]:
            stop(process)  # only the processes this test started, by their PID
        _remove_namespaces(hosts)
