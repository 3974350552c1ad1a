"""Several "hosts" on one machine: network namespaces with their own addresses on a bridge (iproute2, veth pairs).

Made and removed by whoever uses them (tests/multihost, bench/bench_network.py); no traffic leaves the machine.
Needs root and `ip`. Each namespace's hostname still resolves to 127.0.0.1 (/etc/hosts is shared).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def can_make_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


@dataclass
class Network:
    """Hosts named ``names``, each a namespace ``<prefix>-<name>`` with address ``<subnet>.<i+1>`` on a bridge.

    ``outside`` gives the bridge itself an address (``<subnet>.254``), so this process, in the machine's own
    namespace, reaches every host over the bridge like one more host would.
    """

    names: tuple[str, ...]
    prefix: str = ""
    subnet: str = ""  # "10.231.N"
    outside: bool = False

    def __post_init__(self) -> None:
        self.prefix = self.prefix or f"jd{os.getpid() % 100000}"
        self.subnet = self.subnet or f"10.231.{random.randrange(1, 254)}"

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def address(self, host: str) -> str:
        return f"{self.subnet}.{self.names.index(host) + 1}"

    def link(self, host: str) -> str:
        """The host's network interface, inside its namespace."""
        return f"{self.prefix}p{self.names.index(host)}"

    def set_link(self, host: str, state: str) -> None:
        """Cut ("down") or mend ("up") the host's network link."""
        ip("-n", self.namespace(host), "link", "set", self.link(host), state)

    @contextlib.contextmanager
    def separated(self, a: str, b: str) -> Iterator[None]:
        """While the block runs, hosts ``a`` and ``b`` cannot reach each other (each has a blackhole route to the
        other's address); both still reach every other host."""
        routes = [(a, b), (b, a)]
        for host, other in routes:
            ip("-n", self.namespace(host), "route", "add", "blackhole", f"{self.address(other)}/32")
        try:
            yield
        finally:
            for host, other in routes:
                ip("-n", self.namespace(host), "route", "del", "blackhole", f"{self.address(other)}/32")

    def popen(
        self, host: str, command: list[str], log: Path | None, env: dict | None = None
    ) -> subprocess.Popen:
        """Start ``command`` on ``host``. `ip netns exec` execs it: the Popen's pid is the command's own, which
        the caller stops."""
        out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 (the child keeps its own copy)
        try:
            return subprocess.Popen(
                ["ip", "netns", "exec", self.namespace(host), *command],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        finally:
            if log:
                out.close()

    def make(self) -> None:
        bridge = f"{self.prefix}br"
        ip("link", "add", bridge, "type", "bridge")
        ip("link", "set", bridge, "up")
        if self.outside:
            ip("addr", "add", f"{self.subnet}.254/24", "dev", bridge)
        for i, host in enumerate(self.names):
            ns, outside, inside = self.namespace(host), f"{self.prefix}v{i}", self.link(host)
            ip("netns", "add", ns)
            ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            ip("link", "set", inside, "netns", ns)
            ip("link", "set", outside, "master", bridge)
            ip("link", "set", outside, "up")
            ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", inside)
            ip("-n", ns, "link", "set", inside, "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def remove(self) -> None:
        for host in self.names:  # a namespace takes its end of the veth pair with it, and the pair goes
            subprocess.run(["ip", "netns", "del", self.namespace(host)], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{self.prefix}br"], capture_output=True)
