"""An experiment's first task: load the training function on a worker before any trial starts, and when that
cannot happen, say why and what to change.

From the kernel, three causes look alike (a task that never ends) and need different fixes:

- no worker at all: a scheduler nobody started workers for, an adaptive cluster that started none;
- workers that cannot import jupyter_dist: a worker handed a task naming a function of jupyter_dist's cannot even
  read its stream from the scheduler, so distributed closes that worker (2026.8) and the task waits, silently, for
  the next one;
- workers that cannot unpickle the training function: a module it needs is only on the kernel's machine.

So a check that needs nothing of jupyter_dist runs first: a closure, which cloudpickle always pickles by value.
The function's own probe depends on it, so Dask hands the probe to no worker unless the check passed there.
"""

from __future__ import annotations

import time

from ..cluster._current import adaptive_maximum, workers_refused
from ..cluster._gateway import gateway_cluster, gateway_size
from ..cluster.slurm import slurm_size, why_no_workers
from ..errors import ClusterError, TrialFunctionError
from ._worker_cache import probe_function

# The module the trial tasks' functions come from: what a worker must be able to import.
RUNNER_MODULE = probe_function.__module__


def load_on_a_worker(client, fn_key: tuple[str, str], fn_blob: bytes | str, key: str, timeout: float) -> None:
    """Load the pickled training function on one of ``client``'s workers within ``timeout`` seconds; a
    TrialFunctionError naming the cause and the fix when it cannot be loaded or no worker takes the task."""
    refusal = _no_worker_will_come(client)
    if refusal:
        raise TrialFunctionError(refusal)
    since = time.time()  # the scheduler's event log is stamped with wall-clock time
    checked = client.submit(_import_check(), fn_blob, pure=False, key=f"{key}-environment")
    loaded = client.submit(probe_function, fn_key, checked, pure=False, key=key)
    try:
        problem = _result_unless_refused(client, loaded, timeout)
    except TimeoutError:
        client.cancel([loaded, checked])
        raise TrialFunctionError(_why_nothing_ran(client, checked, since, timeout)) from None
    except _Refused as refused:
        client.cancel([loaded, checked])
        raise TrialFunctionError(str(refused)) from None
    except ImportError as exc:
        if checked.status != "error":
            raise
        raise TrialFunctionError(_cannot_import_jupyter_dist(client, *exc.args)) from None
    except RuntimeError as exc:
        if "deserialization of the task graph" not in str(exc):
            raise
        raise TrialFunctionError(
            f"the Dask scheduler at {client.scheduler.address} cannot read jupyter_dist's tasks (distributed: "
            f"error during deserialization of the task graph): install jupyter_dist {_version()} (this kernel's "
            "version) where the scheduler runs, as on the workers"
        ) from None
    if problem:
        raise TrialFunctionError(problem)


class _Refused(ClusterError):
    """The cluster said it cannot start the workers the task waits for."""


def _result_unless_refused(client, future, timeout: float):
    """``future.result(timeout)``, given up as soon as the cluster says no worker is coming (Slurm refused a
    worker job): its words then, within a second, rather than after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return future.result(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        except TimeoutError:
            refused = workers_refused(client)
            if refused:
                raise _Refused(refused) from None
            if time.monotonic() >= deadline:
                raise


def _import_check():
    """The check a worker runs first: it passes the function's bytes on to the probe when jupyter_dist's runner
    imports there, and raises ImportError(missing module, detail, Python) when it does not."""

    def import_runner(blob: bytes) -> bytes:
        import importlib
        import sys

        try:
            importlib.import_module(RUNNER_MODULE)
        except Exception as exc:
            python = f"Python {sys.version.split()[0]} at {sys.executable}"
            raise ImportError(getattr(exc, "name", None), f"{type(exc).__name__}: {exc}", python) from None
        return blob

    return import_runner


def _version() -> str:
    from .._version import __version__

    return __version__


def _cannot_import_jupyter_dist(
    client, missing: str | None = None, detail: str = "", python: str = ""
) -> str:
    what = (
        "jupyter_dist"
        if missing in (None, "jupyter_dist") or missing.startswith("jupyter_dist.")
        else missing
    )
    where = _where_workers_come_from(client)
    if what == "jupyter_dist":
        return (
            f"the Dask workers cannot import jupyter_dist ({detail}; workers' {python}), so they cannot run "
            f"any trial: install jupyter_dist {_version()} (this kernel's version) in the workers' environment"
            f"{where}"
        )
    return (
        f"the Dask workers cannot import jupyter_dist, which needs module {what!r} there ({detail}; workers' "
        f"{python}): install jupyter_dist {_version()} with its dependencies in the workers' environment{where}"
    )


def _where_workers_come_from(client) -> str:
    if slurm_size(client) is not None:
        return (
            " (the Python the Slurm worker jobs run: jupyter_dist.slurm.options' python, or a "
            "job_script_prologue that activates the environment)"
        )
    if gateway_size(client) is None:
        return " (the Python that runs `dask worker`, or the cluster's image)"
    return (
        " (the image or environment the gateway starts workers with: the admin's worker image, or an option "
        "in jupyter_dist.gateway.options such as image or environment)"
    )


def _no_worker_will_come(client) -> str | None:
    """Why no worker can ever take the task, said before waiting for one: this kernel's gateway cluster fixed
    at 0 workers, with none there."""
    size = gateway_size(client)
    if size is None or size != ("workers", 0):
        return None
    if client.scheduler_info(n_workers=-1).get("workers"):
        return None
    return (
        f"the Dask Gateway cluster {gateway_cluster().name} has 0 workers and is not adaptive (workers=0, from "
        "jupyter_dist.gateway.workers or %distribute_cluster): scale it with %distribute_cluster gateway "
        "--workers N (use_cluster('gateway', workers=N)), or set jupyter_dist.gateway.workers / "
        "jupyter_dist.gateway.adapt"
    )


def _why_nothing_ran(client, checked, since: float, timeout: float) -> str:
    waited = f"within {timeout:.0f}s"
    if checked.status == "finished":
        return (
            f"a Dask worker imported jupyter_dist but did not finish loading the training function {waited}: "
            "unpickling it (or a module it imports) hangs or is very slow there"
        )
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    if workers:
        busy = sum(1 for keys in client.processing().values() if keys)
        return (
            f"none of the cluster's {len(workers)} Dask workers took a first task {waited} ({busy} of them "
            "busy with other work): wait until they are free and run it again, or use another cluster (cluster=)"
        )
    came = [
        event["worker"]
        for stamp, event in client.get_events("all")
        if stamp >= since and isinstance(event, dict) and event.get("action") == "add-worker"
    ]
    if came:
        return (
            f"{len(came)} Dask worker(s) joined the cluster {waited} and left before running a first task: they "
            "stop as they start or soon after (their logs say why: memory, a failing start-up command)"
        )
    return f"no Dask worker joined the cluster {waited}: {_no_workers_because(client)}"


def _no_workers_because(client) -> str:
    slurm = why_no_workers(client)
    if slurm:
        return slurm
    size = gateway_size(client)
    if size is not None:
        name = gateway_cluster().name
        kind, value = size
        asked = (
            f"adapts between {value[0]} and {value[1]} workers"
            if kind == "adapt"
            else f"was scaled to {value} workers"
        )
        return (
            f"the Dask Gateway cluster {name} {asked}, and the gateway started none: it is still starting them "
            "(pulling a large image can take minutes: run the cell again), or cannot (its logs, or the cluster's "
            "page there, say why: no capacity left, a worker image or command that fails). Check "
            "jupyter_dist.gateway.options (image, worker_cores, worker_memory) and jupyter_dist.gateway.workers / "
            ".adapt, or ask the gateway's admin"
        )
    maximum = adaptive_maximum(client)
    if maximum is not None:
        return (
            f"the cluster adapts up to {maximum} workers and started none: check that it can start workers "
            "(its own logs say why not), or scale it to a fixed size (cluster.scale(N))"
        )
    address = client.scheduler.address
    return (
        f"the Dask scheduler at {address} has no workers. Start some (`dask worker {address}`), or run on another "
        "cluster (cluster=, JUPYTER_DIST_CLUSTER, dask config jupyter_dist.cluster)"
    )
