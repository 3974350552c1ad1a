"""A Slurm cluster kept past its kernel (``jupyter_dist.slurm.shutdown-on-close: false``).

dask-jobqueue runs the scheduler, and the adaptive scaling that submits worker jobs, in the process that made the
cluster. To outlive a kernel, that process is not the kernel but a keeper of its own, started detached from it
(``python -m jupyter_dist.cluster.slurm._keeper``): it makes the cluster, writes its scheduler's address to a
state file in the user's Jupyter data directory, and keeps it until nobody has used it for ``idle-timeout`` or
its scheduler is shut down (``client.shutdown()``), then cancels the worker jobs and ends. A kernel connects as
a client; what it asks of the cluster itself (a size, why no worker comes) runs in the keeper, on the
scheduler (``Client.run_on_scheduler``), where the cluster object lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dask

from ...errors import ClusterError
from ._jobs import open_cluster
from ._state import made
from ._state import settings as slurm_settings

# How long a kernel waits for the keeper it started to have its scheduler up (importing dask-jobqueue and
# starting a scheduler take seconds; sbatch --test-only milliseconds).
START_TIMEOUT_S = 60
# How long a kept cluster nobody uses (no client, no task) lives on: the gateway's idle timeout, here.
DEFAULT_IDLE_TIMEOUT = "1 hour"
POLL_S = 2.0


def state_file() -> Path:
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "jupyter_dist" / "slurm-cluster.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def kept_client(settings: dict[str, Any]):
    """A client of the user's kept Slurm cluster, and whether its keeper was started now: the running one, else
    a keeper started for it (one at a time: a lock file keeps two kernels from starting two)."""
    from distributed import Client

    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _read(path)
        started = False
        if not (state and "address" in state and _alive(state.get("pid", -1))):
            state, started = _start_keeper(path, settings), True
    try:
        return Client(state["address"], timeout="10s", set_as_default=False), started
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"could not reach the kept Slurm cluster's scheduler at {state['address']} (keeper pid "
            f"{state.get('pid')}, {path}): {exc}"
        ) from None


def _start_keeper(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    path.unlink(missing_ok=True)
    # The settings as this kernel sees them, dask.config.set(...) included, which the keeper would not inherit.
    config = {
        "jupyter_dist": {"slurm": settings},
        "jobqueue": {"slurm": dask.config.get("jobqueue.slurm", {})},
    }
    log = path.with_suffix(".log")
    with open(log, "ab") as out:
        keeper = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path), json.dumps(config, default=str)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # not in the kernel's process group: a kernel's end or interrupt spares it
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = _read(path)
        if state and state.get("pid") == keeper.pid:
            if "error" in state:
                raise ClusterError(state["error"])
            return state
        if keeper.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise ClusterError(f"the keeper of the kept Slurm cluster ended as it started ({log}):\n{tail}")
        time.sleep(0.2)
    keeper.kill()
    raise ClusterError(
        f"the keeper of the kept Slurm cluster did not start within {START_TIMEOUT_S}s ({log})"
    )


def _write(path: Path, state: dict[str, Any]) -> None:
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(state))
    partial.replace(path)  # a kernel never reads half a file


def _idle(scheduler) -> bool:
    """No client but the cluster's own, and no task: nobody is using the cluster."""
    clients = [c for c in scheduler.clients if c != "fire-and-forget" and not str(c).startswith("Cluster")]
    return not clients and not scheduler.tasks


def main(path: str, config: str) -> None:
    from distributed.core import Status

    state_path = Path(path)
    dask.config.update(dask.config.config, json.loads(config), priority="new")
    settings = slurm_settings()
    try:
        cluster = open_cluster(settings)
    except Exception as exc:  # said to the kernel that waits, in the keeper's words
        _write(state_path, {"pid": os.getpid(), "error": str(exc)})
        return
    made.update(cluster=cluster)
    _write(state_path, {"pid": os.getpid(), "address": cluster.scheduler_address})
    timeout = dask.utils.parse_timedelta(settings.get("idle-timeout") or DEFAULT_IDLE_TIMEOUT)
    idle_since = time.monotonic()
    try:
        while cluster.scheduler.status not in (Status.closing, Status.closed):
            if not _idle(cluster.scheduler):
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > timeout:
                break
            time.sleep(POLL_S)
    finally:
        # Its worker jobs are cancelled. Once the scheduler was shut down, closing tries to reach it again:
        # briefly, not for distributed's 30 s connect timeout.
        with contextlib.suppress(Exception), dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
            cluster.close()
        if (_read(state_path) or {}).get("pid") == os.getpid():
            state_path.unlink(missing_ok=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
