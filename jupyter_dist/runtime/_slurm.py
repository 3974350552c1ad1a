"""``cluster="slurm"``: a dask-jobqueue SLURMCluster of the user's own, made on first use and reused by later cells.

Each Dask worker is one Slurm job (``sbatch``); the scheduler runs in the kernel's process, so its dashboard is
on this machine and the views link it through the user's Jupyter server. The HPC admin's dask config decides the
jobs (``jupyter_dist.slurm.*``: queue, account, walltime, cores, memory, GPUs, extra directives; see
jupyter_dist.yaml); dask-jobqueue's own ``jobqueue.slurm.*`` settings fill in what it leaves unset. As for a
gateway cluster, the cell does not change between a laptop and the HPC centre.

What Slurm does to jobs is what happens to workers: a job that Slurm preempts, cancels or ends at its walltime is
a lost worker, and trials on it run again (from their checkpoint). Workers retire before their walltime
(distributed's ``--lifetime``, staggered so they do not all go at once) and adaptive scaling submits their
replacements, so an experiment outlasts any one job. A cluster kept past its kernel (``shutdown-on-close:
false``) lives in a keeper process instead (_slurm_keeper.py).
"""

from __future__ import annotations

import atexit
import re
import socket
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import dask

from ..errors import ArgumentError, ClusterError
from ._sizing import check_sizing, close_made, grown_span

# A worker job's size when neither jupyter_dist.slurm nor jobqueue.slurm sets one.
DEFAULT_CORES = 1
DEFAULT_MEMORY = "4GiB"
DEFAULT_WALLTIME = "01:00:00"
# How long before its walltime a worker retires: a tenth of the walltime, within these bounds, so the trial it
# ran is re-run elsewhere from its checkpoint rather than killed by Slurm mid-step.
LIFETIME_MARGIN_S = (30, 600)
# How long sbatch --test-only (and scontrol) may take: Slurm's controller answers in milliseconds when it is up.
SLURM_COMMAND_TIMEOUT_S = 20

USER_SIZE = "use_cluster('slurm', workers=/adapt=)"
ADMIN_SIZE = "jupyter_dist.slurm.workers / jupyter_dist.slurm.adapt"
DEFAULT_SIZE = "jupyter_dist's default size"

_lock = threading.Lock()
# This kernel's Slurm cluster: "cluster", "client", "size" (("adapt", (min, max)) or ("workers", n)), "asked_in",
# "refused" (what Slurm said when it refused a worker job, newest last) and "interface" (how it was chosen).
_made: dict[str, Any] = {}


def _jobqueue():
    try:
        import dask_jobqueue
    except ImportError:
        raise ClusterError("cluster='slurm' needs dask-jobqueue: pip install 'jupyter_dist[slurm]'") from None
    return dask_jobqueue


def _settings() -> dict[str, Any]:
    return dask.config.get("jupyter_dist.slurm", {}) or {}


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


def _run(command: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
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
        shown = _run(["scontrol", "show", "config"])
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
        answer = _run(["sbatch", "--test-only", file.name])
    if answer.returncode != 0:
        said = _slurm_words(answer.stderr or answer.stdout)
        raise ClusterError(
            f"Slurm refuses the Dask worker jobs of cluster='slurm': {said}. Check jupyter_dist.slurm (queue, "
            f"account, walltime, cores, memory, gpus, job-extra); the job's directives:\n{_directives(script)}"
        )


def _slurm_words(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines) or "no reason given"


def _directives(script: str) -> str:
    return "\n".join(line for line in script.splitlines() if line.startswith("#SBATCH"))


def _cluster_class():
    """SLURMCluster whose jobs remember what Slurm said when it refused one: adaptive scaling submits them in
    the background, where dask-jobqueue only logs the refusal, and the kernel would wait for workers that
    never come."""
    dask_jobqueue = _jobqueue()
    from distributed.core import Status

    class RefusalAwareJob(dask_jobqueue.slurm.SLURMJob):
        async def start(self):
            try:
                await super().start()
                _made.setdefault("jobs", []).append(str(self.job_id))
                _made.pop("refused", None)  # Slurm takes jobs again: an earlier refusal no longer holds
            except Exception as exc:
                # dask-jobqueue's RuntimeError quotes the command, its exit code, stdout and stderr: Slurm's
                # words are the stderr.
                said = str(exc).rpartition("stderr:")[2] or str(exc)
                _made.setdefault("refused", []).append(_slurm_words(said))
                # Failed, not "created": closing the cluster asserts each job it made ended one way or another.
                self.status = Status.failed
                raise

    class JupyterDistSLURMCluster(dask_jobqueue.SLURMCluster):
        job_cls = RefusalAwareJob

    return JupyterDistSLURMCluster


def refusal(client=None) -> str | None:
    """Why this kernel's Slurm cluster cannot give workers, in Slurm's or the workers' words: Slurm refused a
    worker job, or a worker job ran and its worker could not reach the scheduler. None: nothing says so (or
    ``client`` is not that cluster's)."""
    if client is not None and client is not _made.get("client"):
        return None
    if _made.get("kept"):
        return _made["client"].run_on_scheduler(_refusal_here)
    return _refusal_here()


def _refusal_here() -> str | None:
    said = _made.get("refused")
    if said:
        return (
            f"Slurm refused a Dask worker job of cluster='slurm': {said[-1]}. Check jupyter_dist.slurm (queue, "
            "account, walltime, cores, memory, gpus, job-extra)"
        )
    cluster = _made.get("cluster")
    if cluster is not None and cluster.scheduler_info.get("workers"):
        return None  # workers reached it: an old job's log that says otherwise is history
    return _unreachable()


# What a worker's log says when it gave up reaching the scheduler (distributed's words, 2026.8): its nanny tries
# for distributed.comm.timeouts.connect, then ends with this.
CANNOT_CONNECT = "Timed out trying to connect to"


def _unreachable() -> str | None:
    """The unreachable-scheduler message when a worker job's log says its worker gave up connecting."""
    cluster = _made.get("cluster")
    folder = getattr(cluster, "_job_kwargs", {}).get("log_directory") if cluster is not None else None
    if not folder:
        return None
    for job in reversed(_made.get("jobs", [])):
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
    address = _made["cluster"].scheduler_address
    how = _made["cluster"]._job_kwargs.get("interface")
    chosen = (
        f"interface {how!r}, from jupyter_dist.slurm.interface" if how else "the address facing slurmctld"
    )
    return (
        f"the Dask workers that Slurm started cannot reach the scheduler at {address} ({chosen}): {evidence}. "
        "The compute nodes cannot reach this machine at that address: set jupyter_dist.slurm.interface to a "
        f"network interface they reach (this machine has: {', '.join(local_interfaces())})"
    )


def slurm_client(
    workers: int | None = None,
    adapt: Any = None,
    *,
    workers_wanted: int | None = None,
    workers_at_once: int | None = None,
):
    """The client of this kernel's Slurm cluster: made on first use, resized when ``workers`` or ``adapt`` is
    given; sized as a gateway cluster is (runtime/_gateway.py): the admin's size, else adaptive from 0 (or a
    data-parallel trial's ranks) up to what the experiment wants."""
    adapt = check_sizing(workers, adapt)
    settings = _settings()
    with _lock:
        client = _made.get("client")
        new = client is None or client.status != "running"
        if new:
            _made.clear()
            if settings.get("shutdown-on-close", True) is False:
                client, new = _kept(settings)  # new: its keeper was started now
            else:
                cluster = _open(settings)
                try:
                    from distributed import Client

                    client = Client(cluster, set_as_default=False)
                except Exception:
                    cluster.close()
                    raise
                _made.update(cluster=cluster, client=client)
                new = True
            _made["client"] = client
            atexit.unregister(close_slurm_cluster)  # once, however many clusters this kernel makes
            atexit.register(close_slurm_cluster)
        if workers is not None or adapt is not None:
            workers, adapt = _within_admin_bounds(settings, workers, adapt)
            _size(workers, adapt, USER_SIZE)
        elif new and (settings.get("workers") is not None or settings.get("adapt") is not None):
            admin = check_sizing(settings.get("workers"), settings.get("adapt"))
            _size(settings.get("workers"), admin, ADMIN_SIZE)
        elif _made.get("asked_in") in (None, DEFAULT_SIZE):
            span = grown_span(slurm_adapt(), workers_wanted, workers_at_once)
            if span is not None:
                _size(None, span, DEFAULT_SIZE)
        return client


def _within_admin_bounds(
    settings: dict[str, Any], workers: int | None, adapt: tuple[int, int] | None
) -> tuple[int | None, tuple[int, int] | None]:
    """A size the user asked for, within the admin's: ``jupyter_dist.slurm.adapt``'s maximum bounds every size
    (what a site allows one user's notebook to hold), with a warning when it clips one."""
    admin = check_sizing(None, settings.get("adapt"))
    if admin is None:
        return workers, adapt
    limit = admin[1]
    clipped = (
        min(workers, limit) if workers is not None else None,
        (min(adapt[0], limit), min(adapt[1], limit)) if adapt is not None else None,
    )
    if clipped != (workers, adapt):
        asked = (
            f"{workers} worker jobs" if workers is not None else f"adapt between {adapt[0]} and {adapt[1]}"
        )
        warnings.warn(
            f"jupyter_dist.slurm.adapt allows at most {limit} worker jobs: asked for {asked}, sized to {limit}",
            stacklevel=4,
        )
    return clipped


def _kept(settings: dict[str, Any]):
    """The client of the user's kept cluster (runtime/_slurm_keeper.py), and whether its keeper was started
    now; a cluster a previous kernel sized keeps that size."""
    from ._slurm_keeper import kept_client

    client, started = kept_client(settings)
    _made.update(kept=True, client=client)
    if not started:
        _made["size"], _made["asked_in"] = client.run_on_scheduler(_size_here)
    return client, started


def _open(settings: dict[str, Any]):
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


def _size(workers: int | None, adapt: tuple[int, int] | None, asked_in: str) -> None:
    """Size this kernel's cluster, in this process or, for a kept one, in its keeper's."""
    if _made.get("kept"):
        _made["size"], _made["asked_in"] = _made["client"].run_on_scheduler(
            _size_here, workers, list(adapt) if adapt else None, asked_in
        )
    else:
        _size_here(workers, adapt, asked_in)


def _size_here(
    workers: int | None = None, adapt: Any = None, asked_in: str | None = None
) -> tuple[tuple[str, Any] | None, str | None]:
    """Size the cluster this process holds (given nothing, just say its size): adaptive even for a fixed size,
    so a worker retired at its lifetime (or whose job Slurm ended) is replaced."""
    if asked_in is not None:
        cluster = _made["cluster"]
        low, high = tuple(adapt) if adapt is not None else (workers, workers)
        if high == 0:
            cluster.scale(0)
        else:
            cluster.adapt(minimum=low, maximum=high)
        _made["size"] = ("adapt", (low, high)) if adapt is not None else ("workers", workers)
        _made["asked_in"] = asked_in
    return _made.get("size"), _made.get("asked_in")


def slurm_cluster():
    """This kernel's Slurm cluster object, or None when it has made none."""
    return _made.get("cluster")


def slurm_size(client=None) -> tuple[str, Any] | None:
    """("adapt", (minimum, maximum)) or ("workers", n); None when this kernel made no Slurm cluster (or
    ``client`` is not its)."""
    if client is not None and client is not _made.get("client"):
        return None
    return _made.get("size")


def slurm_adapt(client=None) -> tuple[int, int] | None:
    """The (minimum, maximum) workers this kernel's Slurm cluster keeps between (a fixed size n is (n, n))."""
    size = slurm_size(client)
    if size is None:
        return None
    return size[1] if size[0] == "adapt" else (size[1], size[1])


def jobs_now() -> list[dict[str, str]]:
    """The worker jobs of the cluster this process holds as ``squeue`` shows them: id, state, reason, time."""
    cluster = _made.get("cluster")
    if cluster is None:
        return []
    ids = [str(job.job_id) for job in list(cluster.workers.values()) if getattr(job, "job_id", None)]
    if not ids:
        return []
    shown = _run(["squeue", "--noheader", "--jobs", ",".join(ids), "--format", "%i|%T|%r|%M"])
    rows = []
    for line in shown.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            rows.append(dict(zip(("id", "state", "reason", "time"), parts, strict=True)))
    return rows


def why_no_workers(client) -> str | None:
    """Why this kernel's Slurm cluster has no worker yet, in Slurm's words: refused jobs, pending jobs (and
    squeue's reason), or running jobs whose workers never reached the scheduler (the network interface)."""
    if slurm_size(client) is None:
        return None
    if _made.get("kept"):
        return _made["client"].run_on_scheduler(_why_here)
    return _why_here()


def _why_here() -> str:
    said = _refusal_here()
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


def describe_size(client=None) -> str | None:
    span = slurm_adapt(client)
    if span is None:
        return None
    return f"adapting between {span[0]} and {span[1]} worker jobs"


def close_slurm_cluster() -> None:
    """Close this kernel's Slurm cluster: its worker jobs are cancelled (scancel); a kept one is left to its
    keeper (this kernel's client alone is closed)."""
    close_made(_made, _lock)
