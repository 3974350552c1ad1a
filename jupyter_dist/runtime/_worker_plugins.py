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
