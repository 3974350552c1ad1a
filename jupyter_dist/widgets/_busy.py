"""The kernel says, every second while an experiment's cell runs, that it is busy.

JupyterLab shows the kernel's last status message. ipykernel 7 answers control-channel and subshell requests
with a busy/idle pair of their own even while a cell runs: the debugger's ``debug_request``s, which JupyterLab
sends whenever a notebook connects to a kernel, and every widget message JupyterLab 4.6 routes over a subshell.
A cell started just before them then reads Idle until it ends (measured: a plain ``time.sleep(12)`` cell, Run
All in a second notebook just opened on the kernel, read Idle in every 0.5 s sample). An experiment's cell
runs for minutes, and Busy is how a user knows it still does.

A thread publishes ``busy`` on the kernel's IOPub (thread-safe: ipykernel's prints from threads take the same
way) with the cell's own request as its parent, as ipykernel's status does, from the moment the cell shows its
first output until the cell ends. It stops at the cell's end by itself (IPython's ``post_run_cell``, which runs
before the kernel says idle), so no path out of the cell can leave the kernel reading Busy. It uses ipykernel's
``_publish_status``; on a kernel without it, nothing is said.
"""

from __future__ import annotations

import threading

BUSY_EVERY_S = 1.0


class KernelBusy:
    """Say busy every BUSY_EVERY_S until ``stop()`` or the end of the cell that made it."""

    def __init__(self) -> None:
        from IPython import get_ipython

        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        shell = get_ipython()
        kernel = getattr(shell, "kernel", None)
        publish = getattr(kernel, "_publish_status", None)
        if publish is None:
            return
        parent = kernel.get_parent("shell")  # the cell's request: read here, on the thread running the cell
        self._shell = shell
        shell.events.register("post_run_cell", self._cell_ended)
        self._thread = threading.Thread(
            target=self._say_busy, args=(publish, parent), name="jupyter_dist-busy", daemon=True
        )
        self._thread.start()

    def _say_busy(self, publish, parent) -> None:
        while not self._stopped.wait(BUSY_EVERY_S):
            publish("busy", "shell", parent)

    def stop(self) -> None:
        """Say nothing more; once this returns, nothing is said (the thread has ended)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._shell.events.unregister("post_run_cell", self._cell_ended)

    def _cell_ended(self, _result) -> None:
        self.stop()
