"""The worker jobs' settings: ``jupyter_dist.slurm`` (the admin's dask config) as SLURMCluster's keywords, with
Slurm's time formats and the workers' lifetime within their walltime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask

from ...errors import ArgumentError
from ._commands import controller_facing_address

__all__ = ["cluster_kwargs", "default_log_directory", "lifetime_args", "walltime_seconds"]

# A worker job's size when neither jupyter_dist.slurm nor jobqueue.slurm sets one.
DEFAULT_CORES = 1
DEFAULT_MEMORY = "4GiB"
DEFAULT_WALLTIME = "01:00:00"
# How long before its walltime a worker retires: a tenth of the walltime, within these bounds, so the trial it
# ran is re-run elsewhere from its checkpoint rather than killed by Slurm mid-step.
LIFETIME_MARGIN_S = (30, 600)


def walltime_seconds(walltime: str) -> int:
    """Slurm's time formats (sbatch --time): minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    text = str(walltime).strip()
    days, _, rest = text.rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        day_count = int(days) if days else 0
    except ValueError:
        raise ArgumentError(
            f"jupyter_dist.slurm.walltime={walltime!r} is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)"
        ) from None
    if days:  # D-HH[:MM[:SS]]
        parts = parts + [0] * (3 - len(parts))
        hours, minutes, seconds = parts
    elif len(parts) == 1:
        hours, minutes, seconds = 0, parts[0], 0
    elif len(parts) == 2:
        hours, minutes, seconds = 0, *parts
    else:
        hours, minutes, seconds = parts
    return ((day_count * 24 + hours) * 60 + minutes) * 60 + seconds


def lifetime_args(walltime: str) -> list[str]:
    """The worker's --lifetime and --lifetime-stagger for jobs of ``walltime``: it retires before Slurm ends its
    job, each worker at a different moment (lifetime ± stagger), so they are not all replaced at once."""
    total = walltime_seconds(walltime)
    low, high = LIFETIME_MARGIN_S
    margin = min(max(total // 10, low), high)
    if total <= margin:
        raise ArgumentError(
            f"jupyter_dist.slurm.walltime={walltime!r} leaves a worker no time to work: give jobs more than "
            f"{margin}s"
        )
    return ["--lifetime", f"{total - margin}s", "--lifetime-stagger", f"{margin // 2}s"]


def cluster_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    """SLURMCluster's keywords from ``jupyter_dist.slurm`` settings; an ArgumentError naming a setting that
    cannot be."""
    known = {
        "queue", "account", "walltime", "cores", "memory", "processes", "job-extra", "gpus", "interface",
        "log-directory", "workers", "adapt", "shutdown-on-close", "idle-timeout", "options",
    }  # fmt: skip
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ArgumentError(
            f"jupyter_dist.slurm has no setting {unknown[0]!r} (it has: {', '.join(sorted(known))}; others go "
            "in jupyter_dist.slurm.options, passed to dask_jobqueue.SLURMCluster)"
        )
    jobqueue = dask.config.get("jobqueue.slurm", {}) or {}
    walltime = settings.get("walltime") or jobqueue.get("walltime") or DEFAULT_WALLTIME
    kwargs: dict[str, Any] = {
        "queue": settings.get("queue"),
        "account": settings.get("account"),
        "walltime": walltime,
        "cores": settings.get("cores") or jobqueue.get("cores") or DEFAULT_CORES,
        "memory": settings.get("memory") or jobqueue.get("memory") or DEFAULT_MEMORY,
        # One worker process per job: a job's worker is what Slurm gives and takes away as a unit.
        "processes": settings.get("processes") or jobqueue.get("processes") or 1,
        # The worker jobs' output, where the kernel reads why a worker never reached the scheduler: a folder
        # the compute nodes share with this machine (the home directory's, beside the store, by default).
        "log_directory": settings.get("log-directory")
        or jobqueue.get("log-directory")
        or default_log_directory(),
    }
    directives = list(settings.get("job-extra") or jobqueue.get("job-extra-directives") or [])
    worker_args = list(jobqueue.get("worker-extra-args") or []) + lifetime_args(walltime)
    gpus = settings.get("gpus")
    if gpus:
        if not isinstance(gpus, int) or gpus < 0:
            raise ArgumentError(
                f"jupyter_dist.slurm.gpus must be a whole number of GPUs per job; got {gpus!r}"
            )
        # Slurm gives the job its GPUs (and sets CUDA_VISIBLE_DEVICES); the worker declares them as the GPU
        # resource, which gpus_per_trial= asks for.
        directives.append(f"--gres=gpu:{gpus}")
        worker_args += ["--resources", f"GPU={gpus}"]
    kwargs["job_extra_directives"] = directives
    kwargs["worker_extra_args"] = worker_args
    # The dashboard on a free port: a shared login node may have another user's on 8787.
    scheduler_options: dict[str, Any] = {"dashboard_address": ":0"}
    interface = settings.get("interface") or jobqueue.get("interface")
    if interface:
        kwargs["interface"] = (
            interface  # the admin knows the site's network: scheduler and workers both use it
        )
    else:
        # The workers connect to the scheduler from the compute nodes: listen on the address of this machine
        # that Slurm's own controller is reached from, the network the compute nodes are on too, rather than
        # the default route's (often a public interface the compute nodes cannot reach).
        host = controller_facing_address()
        if host:
            scheduler_options["host"] = host
    kwargs["scheduler_options"] = scheduler_options
    options = dict(settings.get("options") or {})
    for key, value in options.items():
        if key == "scheduler_options":
            scheduler_options.update(value)
        else:
            kwargs[key] = value
    return {k: v for k, v in kwargs.items() if v is not None}


def default_log_directory() -> str:
    from jupyter_core.paths import jupyter_data_dir

    return str(Path(jupyter_data_dir()) / "jupyter_dist" / "slurm-logs")
