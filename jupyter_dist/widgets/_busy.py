"""The kernel says, twice a second while an experiment's cell runs, that it is busy.

JupyterLab shows the kernel's last status message. ipykernel 7 answers control-channel and subshell requests
with a busy/idle pair of their own even while a cell runs: the debugger's ``debug_request``s, which JupyterLab
sends whenever a notebook connects to a kernel, and every widget message JupyterLab 4.6 routes over a subshell.
A cell started just before them then reads Idle until it ends (measured: a plain ``time.sleep(12)`` cell, Run
All in a second notebook just opened on the kernel, read Idle in every 0.5 s sample). An experiment's cell
runs for minutes, and Busy is how a user knows it still does.

A thread publishes ``busy`` on the kernel's IOPub (thread-safe: ipykernel's prints from threads take the same
way) with the cell's own request as its parent, as ipykernel's status does, from the moment ``%%distribute``
starts (its cell body may import torch for seconds first) or the experiment's first output shows, until the
cell ends. It stops at the cell's end by itself (IPython's ``post_run_cell``, which runs
before the kernel says idle), so no path out of the cell can leave the kernel reading Busy. It uses ipykernel's
``_publish_status``; on a kernel without it, nothing is said.
"""

from __future__ import annotations

import threading
from typing import Any

BUSY_EVERY_S = 0.5


class KernelBusy:
    """Say busy every BUSY_EVERY_S until ``stop()`` or the end of the cell that made it."""

    _current: KernelBusy | None = None

    @classmethod
    def for_this_cell(cls) -> KernelBusy:
        """The one saying busy for the running cell: the one already at it, or a new one."""
        current = cls._current
        if current is None or current._thread is None or current._request != _request_id(_cell_parent()):
            current = cls._current = cls()
        return current

    def __init__(self) -> None:
        from IPython import get_ipython

        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._shell = get_ipython()
        publish = getattr(getattr(self._shell, "kernel", None), "_publish_status", None)
        parent = _cell_parent()  # read here, on the thread running the cell
        self._request = _request_id(parent)
        if publish is None or self._request is None:
            return
        self._shell.events.register("post_run_cell", self._cell_ended)
        self._thread = threading.Thread(
            target=self._say_busy, args=(publish, parent), name="jupyter_dist-busy", daemon=True
        )
        self._thread.start()

    def _say_busy(self, publish, parent) -> None:
        # At once, then on: an Idle from the debugger's probe may have just come (JupyterLab sends it as the
        # notebook connects, which Run All on a new kernel meets as its first cells start).
        while True:
            publish("busy", "shell", parent)
            if self._stopped.wait(BUSY_EVERY_S):
                return

    def stop(self) -> None:
        """Say nothing more; once this returns, nothing is said (the thread has ended)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._shell.events.unregister("post_run_cell", self._cell_ended)

    def _cell_ended(self, _result) -> None:
        self.stop()


def _cell_parent() -> dict | None:
    """The request the running cell answers (None outside a kernel)."""
    from IPython import get_ipython

    kernel: Any = getattr(get_ipython(), "kernel", None)  # ipykernel's, read by name only
    return kernel.get_parent("shell") if hasattr(kernel, "get_parent") else None


def _request_id(parent: dict | None) -> str | None:
    return (parent or {}).get("header", {}).get("msg_id")


def say_busy_while_the_cell_runs() -> None:
    """From now until the cell ends (or its experiment's view has finished), the kernel says busy twice a second."""
    KernelBusy.for_this_cell()
