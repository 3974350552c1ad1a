"""Worker plugins for the embedded cluster."""

from __future__ import annotations

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
