"""Worker plugins for the embedded cluster."""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import signal
import threading

from distributed.diagnostics.plugin import WorkerPlugin


class IgnoreKernelInterrupts(WorkerPlugin):
    """The embedded cluster's workers ignore SIGINT.

    Jupyter interrupts a kernel by signalling its whole process group, which includes the worker processes the
    kernel spawned; without this, every interrupt (meant as "stop gracefully") killed the workers mid-trial.
    A plugin, so that workers the nanny restarts get it too.
    """

    name = "jupyter_dist-ignore-kernel-interrupts"

    def setup(self, worker) -> None:
        if threading.current_thread() is threading.main_thread():  # where the worker's event loop runs
            signal.signal(signal.SIGINT, signal.SIG_IGN)


class PreimportModules(WorkerPlugin):
    """Each worker imports the given modules when it starts, before any trial runs, then freezes the garbage
    collector's view of everything loaded so far.

    What a warmed process pool's initializer does: the import cost (seconds for torch) is paid once at cluster
    start instead of inside the first trial on every worker, where it also inflated that trial's duration. A
    module a worker cannot import is logged and skipped: the trial that needs it fails with the real error.

    ``gc.freeze()``: a training loop allocates enough container objects to trigger a full collection every few
    steps, and each one walked the ~400,000 objects of the worker's libraries (Dask, torch...), which never
    become garbage: ~8% of a small MLP's CPU time in a trial, halved by freezing them (as forking servers do).
    """

    name = "jupyter_dist-preimport"

    def __init__(self, modules: list[str]):
        self.modules = list(modules)

    async def setup(self, worker) -> None:
        # off the worker's event loop, so its heartbeats go on while torch imports
        await asyncio.get_running_loop().run_in_executor(None, self._import_all, worker)
        gc.freeze()

    def _import_all(self, worker) -> None:
        for module in self.modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - any import failure: the trial reports it properly
                logging.getLogger("jupyter_dist").warning(
                    "could not preimport %s on %s: %s", module, worker, exc
                )


class YieldToTheKernel(WorkerPlugin):
    """The embedded cluster's workers run at a lower CPU priority (``nice`` + WORKER_NICENESS) than the kernel.

    They share the laptop's cores with the kernel, which runs the trial loop, Dask's scheduler and client, and
    every view, and with JupyterLab and the browser. Trials that keep every core busy then no longer make the
    kernel wait for a core: it hears of each report and outcome when it arrives, and the notebook stays
    responsive; the trials lose only what the kernel uses. Measured on 2 cores, 3,000 trials x 100 tight-loop
    reports, 2 workers, together with the run's collector threshold (trials/_collector.py): delivery p99 34-60 ms
    before, 37-42 ms after.
    """

    name = "jupyter_dist-yield-to-the-kernel"

    def setup(self, worker) -> None:
        lower_priority(WORKER_NICENESS)


# CFS weighs a nice-10 thread at 110 against a nice-0 one's 1024: the kernel gets ~90% of a core it wants.
WORKER_NICENESS = 10


def lower_priority(by: int) -> None:
    """Add ``by`` to the niceness of every thread of this process (Linux sets it per thread; threads started
    later inherit their creator's). Nothing where the platform has no per-process priorities."""
    import os

    if not hasattr(os, "setpriority"):
        return
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]  # no /proc: the calling thread
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + by)
        except OSError:
            pass  # a thread that ended meanwhile
