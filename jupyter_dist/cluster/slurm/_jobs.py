"""The worker jobs as Slurm runs them: the cluster class whose jobs remember a refusal, and why a cluster has
no worker yet, in Slurm's or the workers' own words (refused, pending, or unable to reach the scheduler)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ArgumentError
from ._commands import check_submission, local_interfaces, run, slurm_words
from ._settings import cluster_kwargs
from ._state import jobqueue, made

__all__ = ["jobs_now", "open_cluster", "refusal_here", "why_here"]


def _cluster_class():
    """SLURMCluster whose jobs remember what Slurm said when it refused one: adaptive scaling submits them in
    the background, where dask-jobqueue only logs the refusal, and the kernel would wait for workers that
    never come."""
    dask_jobqueue = jobqueue()
    from distributed.core import Status

    class RefusalAwareJob(dask_jobqueue.slurm.SLURMJob):  # type: ignore[name-defined]  # imported on demand
        async def start(self):
            try:
                await super().start()
                made.setdefault("jobs", []).append(str(self.job_id))
                made.pop("refused", None)  # Slurm takes jobs again: an earlier refusal no longer holds
            except Exception as exc:
                # dask-jobqueue's RuntimeError quotes the command, its exit code, stdout and stderr: Slurm's
                # words are the stderr.
                said = str(exc).rpartition("stderr:")[2] or str(exc)
                made.setdefault("refused", []).append(slurm_words(said))
                # Failed, not "created": closing the cluster asserts each job it made ended one way or another.
                self.status = Status.failed
                raise

    class JupyterDistSLURMCluster(dask_jobqueue.SLURMCluster):  # type: ignore[name-defined]  # imported on demand
        job_cls = RefusalAwareJob

    return JupyterDistSLURMCluster


def refusal_here() -> str | None:
    said = made.get("refused")
    if said:
        return (
            f"Slurm refused a Dask worker job of cluster='slurm': {said[-1]}. Check jupyter_dist.slurm (queue, "
            "account, walltime, cores, memory, gpus, job-extra)"
        )
    cluster = made.get("cluster")
    if cluster is not None and cluster.scheduler_info.get("workers"):
        return None  # workers reached it: an old job's log that says otherwise is history
    return _unreachable()


# What a worker's log says when it gave up reaching the scheduler (distributed's words, 2026.8): its nanny tries
# for distributed.comm.timeouts.connect, then ends with this.
CANNOT_CONNECT = "Timed out trying to connect to"


def _unreachable() -> str | None:
    """The unreachable-scheduler message when a worker job's log says its worker gave up connecting."""
    cluster = made.get("cluster")
    folder = getattr(cluster, "_job_kwargs", {}).get("log_directory") if cluster is not None else None
    if not folder:
        return None
    for job in reversed(made.get("jobs", [])):
        log = next(iter(Path(folder).glob(f"*-{job}.err")), None)
        try:
            text = log.read_text(errors="replace") if log is not None else ""
        except OSError:
            continue
        if CANNOT_CONNECT in text:
            line = next(line for line in text.splitlines() if CANNOT_CONNECT in line)
            return _cannot_reach(f"worker job {job}'s log ({log}) says: {line.strip()}")
    return None


def _cannot_reach(evidence: str) -> str:
    address = made["cluster"].scheduler_address
    how = made["cluster"]._job_kwargs.get("interface")
    chosen = (
        f"interface {how!r}, from jupyter_dist.slurm.interface" if how else "the address facing slurmctld"
    )
    return (
        f"the Dask workers that Slurm started cannot reach the scheduler at {address} ({chosen}): {evidence}. "
        "The compute nodes cannot reach this machine at that address: set jupyter_dist.slurm.interface to a "
        f"network interface they reach (this machine has: {', '.join(local_interfaces())})"
    )


def open_cluster(settings: dict[str, Any]):
    cls = _cluster_class()
    kwargs = cluster_kwargs(settings)
    try:
        cluster = cls(**kwargs)
    except (TypeError, ValueError) as exc:  # a keyword SLURMCluster does not take, from .options
        raise ArgumentError(f"jupyter_dist.slurm: dask_jobqueue.SLURMCluster refused it: {exc}") from None
    try:
        check_submission(cluster)
    except Exception:
        cluster.close()
        raise
    return cluster


def jobs_now() -> list[dict[str, str]]:
    """The worker jobs of the cluster this process holds as ``squeue`` shows them: id, state, reason, time."""
    cluster = made.get("cluster")
    if cluster is None:
        return []
    ids = [str(job.job_id) for job in list(cluster.workers.values()) if getattr(job, "job_id", None)]
    if not ids:
        return []
    shown = run(["squeue", "--noheader", "--jobs", ",".join(ids), "--format", "%i|%T|%r|%M"])
    rows = []
    for line in shown.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            rows.append(dict(zip(("id", "state", "reason", "time"), parts, strict=True)))
    return rows


def why_here() -> str:
    said = refusal_here()
    if said:
        return said
    jobs = jobs_now()
    if not jobs:
        return (
            "the Slurm cluster submitted no worker job yet (adaptive scaling submits them as trials queue): run "
            "the cell again, or size it with %distribute_cluster slurm --workers N"
        )
    running = [job for job in jobs if job["state"] == "RUNNING"]
    if running:
        ids = ", ".join(j["id"] for j in running)
        return _cannot_reach(f"Slurm runs the worker jobs {ids}, and none of their workers came")
    pending = "; ".join(f"job {j['id']} {j['state'].lower()} ({j['reason']})" for j in jobs)
    return (
        f"Slurm has not started the worker jobs yet: {pending}. They start when Slurm gives them a node "
        "(squeue's reason says what they wait for); ask for fewer cores, less memory or a shorter walltime "
        "in jupyter_dist.slurm for a quicker start"
    )
