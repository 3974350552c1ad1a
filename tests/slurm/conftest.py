"""The ``slurm`` fixture: a real one-node Slurm (munged, slurmctld, slurmd, as root) for this module, from a
temporary slurm.conf, started and stopped here; ``slurm_cluster``: jupyter_dist's cluster='slurm' on it.

The node declares more CPUs than the machine has (SlurmdParameters=config_overrides), so that several one-core
worker jobs run at once on a 2-core machine, as on a site's node; proctrack/linuxproc and task/none need no
cgroups. `make slurm` installs the Debian packages (scripts/install_system_packages.sh slurm).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import dask
import pytest
from process_tools import stop

from jupyter_dist.cluster import forget_cluster

SLURM_CONF = """\
ClusterName=jdtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
KillWait=5
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName={host} NodeAddr=127.0.0.1 CPUs=8 RealMemory=16000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Slurm:
    root: Path
    conf: Path

    def run(self, *command: str) -> str:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env={**os.environ, "SLURM_CONF": str(self.conf)},
            timeout=30,
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
        return done.stdout

    def jobs(self) -> dict[str, str]:
        """job id -> state, of the jobs Slurm knows now."""
        out = self.run("squeue", "--noheader", "--format", "%i %T")
        return dict(line.split() for line in out.splitlines() if line.strip())

    def log(self, name: str) -> str:
        path = self.root / "log" / name
        return path.read_text() if path.exists() else ""


def _wait_until(predicate, timeout: float, what: str, logs=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout}s\n{logs()}")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = [c for c in ("munged", "slurmctld", "slurmd", "sbatch") if shutil.which(c) is None]
    assert not missing, f"Slurm is not installed ({missing}): make slurm"
    assert os.geteuid() == 0, "the one-node Slurm of these tests runs its daemons as root"
    root = tmp_path_factory.mktemp("slurm")
    for folder in ("munge", "state", "spool", "log", "workers"):
        (root / folder).mkdir()
    root.chmod(0o755)  # munged wants its socket's directories reachable by all
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    host = socket.gethostname().split(".")[0]
    conf.write_text(SLURM_CONF.format(host=host, ctld_port=free_port(), d_port=free_port(), root=root))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    processes = []
    slurm = Slurm(root=root, conf=conf)

    def logs() -> str:
        return "\n".join(
            f"--- {n}\n{slurm.log(n)[-3000:]}" for n in ("munged.log", "slurmctld.log", "slurmd.log")
        )

    def start(*command: str, name: str) -> None:
        with open(root / "log" / f"{name}.out", "wb") as out:
            processes.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))

    try:
        munge = root / "munge"
        start(
            "munged", "--foreground", "--force", f"--socket={munge}/munge.sock", f"--key-file={key}",
            f"--log-file={root}/log/munged.log", f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/seed",
            name="munged",
        )  # fmt: skip
        _wait_until(lambda: (munge / "munge.sock").exists(), 10, "munged started its socket", logs)
        start("slurmctld", "-D", "-f", str(conf), name="slurmctld")
        start("slurmd", "-D", "-f", str(conf), "-N", host, name="slurmd")

        def idle() -> bool:
            done = subprocess.run(
                ["sinfo", "--noheader", "--format", "%t"], capture_output=True, text=True, env=env
            )
            return done.stdout.strip() == "idle"

        _wait_until(idle, 30, "the Slurm node came up idle", logs)
        yield slurm
    finally:
        for process in reversed(processes):  # slurmd (which ends its jobs' processes), slurmctld, munged
            stop(process, grace=15)


@pytest.fixture
def slurm_cluster(slurm, tmp_path, monkeypatch):
    """cluster='slurm' on the test's Slurm: worker jobs of 1 core and 1 GiB, their output in tmp_path/workers;
    closed (its jobs cancelled) after the test."""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    settings = {
        "cores": 1,
        "memory": "1GiB",
        "walltime": "00:30:00",
        "log-directory": str(tmp_path / "workers"),
    }
    with dask.config.set({"jupyter_dist.slurm": settings}):
        yield settings
        forget_cluster("slurm")
    _wait_until(lambda: not slurm.jobs(), 30, "the cluster's worker jobs were cancelled")
