"""Slurm's commands as the kernel runs them (scontrol, sbatch --test-only, squeue), with a ClusterError in
Slurm's words when one is missing, slow, or refuses; and the addresses the scheduler may listen on."""

from __future__ import annotations

import re
import socket
import subprocess
import tempfile

from ...errors import ClusterError

__all__ = ["check_submission", "controller_facing_address", "local_interfaces", "run", "slurm_words"]

# How long sbatch --test-only (and scontrol) may take: Slurm's controller answers in milliseconds when it is up.
SLURM_COMMAND_TIMEOUT_S = 20


def run(command: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=SLURM_COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise ClusterError(
            f"cluster='slurm' runs Slurm's {command[0]}, which is not on this machine's PATH: run Jupyter on a "
            "machine that submits Slurm jobs (a login node), or install Slurm's client commands"
        ) from None
    except subprocess.TimeoutExpired:
        raise ClusterError(
            f"Slurm's {command[0]} did not answer within {SLURM_COMMAND_TIMEOUT_S}s: is slurmctld up? "
            "(sinfo says)"
        ) from None


def controller_host() -> str | None:
    """Where slurmctld runs, as this machine's Slurm configuration says (``scontrol show config``)."""
    try:
        shown = run(["scontrol", "show", "config"])
    except ClusterError:
        return None
    found = re.search(r"^SlurmctldHost\[0\]\s*=\s*([^\s(]+)(?:\(([^)]+)\))?", shown.stdout, re.MULTILINE)
    if not found:
        return None
    return found.group(2) or found.group(1)


def controller_facing_address() -> str | None:
    """This machine's address on the route to slurmctld (no packet is sent: a UDP socket's connect only picks
    the route); None when the controller cannot be named or resolved."""
    host = controller_host()
    if not host:
        return None
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, 6817))
            return probe.getsockname()[0]
    except OSError:
        return None


def local_interfaces() -> list[str]:
    """This machine's IPv4 interfaces as ``name address``, for the message that asks the user to pick one."""
    import psutil  # distributed depends on it

    return [
        f"{name} {addr.address}"
        for name, addrs in psutil.net_if_addrs().items()
        for addr in addrs
        if addr.family == socket.AF_INET
    ]


def check_submission(cluster) -> None:
    """Ask Slurm whether it would take the cluster's worker job (``sbatch --test-only``: nothing is submitted), so
    an unknown partition, account or QOS, or a size no node has, is a ClusterError in Slurm's words now rather
    than workers that never come."""
    script = cluster.job_script()
    with tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="jupyter-dist-slurm-") as file:
        file.write(script)
        file.flush()
        answer = run(["sbatch", "--test-only", file.name])
    if answer.returncode != 0:
        said = slurm_words(answer.stderr or answer.stdout)
        raise ClusterError(
            f"Slurm refuses the Dask worker jobs of cluster='slurm': {said}. Check jupyter_dist.slurm (queue, "
            f"account, walltime, cores, memory, gpus, job-extra); the job's directives:\n{_directives(script)}"
        )


def slurm_words(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines) or "no reason given"


def _directives(script: str) -> str:
    return "\n".join(line for line in script.splitlines() if line.startswith("#SBATCH"))
