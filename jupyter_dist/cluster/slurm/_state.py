"""The Slurm cluster this process holds, shared by the modules of this package and by the keeper process
(which holds a kept cluster for the kernels that use it): the one place its state lives."""

from __future__ import annotations

import threading
from typing import Any

import dask

from ...errors import ClusterError

__all__ = ["jobqueue", "lock", "made", "settings"]

lock = threading.Lock()
# This process's Slurm cluster: "cluster", "client", "size" (("adapt", (min, max)) or ("workers", n)), "asked_in",
# "refused" (what Slurm said when it refused a worker job, newest last), "jobs" (the ids of the jobs it
# submitted) and "kept" (its scheduler runs in a keeper process).
made: dict[str, Any] = {}


def jobqueue():
    try:
        import dask_jobqueue
    except ImportError:
        raise ClusterError("cluster='slurm' needs dask-jobqueue: pip install 'jupyter_dist[slurm]'") from None
    return dask_jobqueue


def settings() -> dict[str, Any]:
    """The HPC admin's ``jupyter_dist.slurm`` dask config."""
    return dask.config.get("jupyter_dist.slurm", {}) or {}
