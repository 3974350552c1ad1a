"""``cluster="slurm"``: each Dask worker a Slurm job (dask-jobqueue's SLURMCluster), made for the user, sized
adaptively, and optionally kept past the kernel by a keeper process of the user's own.

_state (the cluster this process holds) <- _commands (Slurm's commands) <- _settings (the jobs' keywords)
<- _jobs (the cluster class, why no worker came) <- _keeper (a kept cluster's process) <- _client (the kernel's
entry: make, size, close).
"""

from ._client import (
    LIMIT_WORDS,
    close_slurm_cluster,
    describe_size,
    hold_for_run,
    refusal,
    slurm_adapt,
    slurm_client,
    slurm_cluster,
    slurm_size,
    why_no_workers,
)

__all__ = [
    "LIMIT_WORDS",
    "close_slurm_cluster",
    "describe_size",
    "hold_for_run",
    "refusal",
    "slurm_adapt",
    "slurm_client",
    "slurm_cluster",
    "slurm_size",
    "why_no_workers",
]
