"""Let chosen widgets be heard while the cell that shows them is still running.

A kernel handles a widget's messages (a click, a pick) on its main shell, which is busy running the experiment's
cell. ipykernel 7 has subshells: threads with their own message loop, and a per-comm hook that routes the comm's
messages to one. We create one subshell per kernel and route the live view's controls there, so the Stop button
works mid-run. Older kernels lack the hook: then ``side_thread()`` is None and the view says to interrupt instead.
"""

from __future__ import annotations

import threading

_subshell: list[str] = []  # one per kernel process, made on first use
_lock = threading.Lock()


def side_thread() -> str | None:
    """The id of this kernel's subshell for widget controls, or None where the kernel cannot route comms."""
    with _lock:
        if _subshell:
            return _subshell[0]
        try:
            from IPython import get_ipython

            kernel = get_ipython().kernel
            manager = kernel.shell_channel_thread.manager
            if not getattr(kernel, "_supports_kernel_subshells", False):
                return None
            created: list[str] = []
            done = threading.Event()

            def create() -> None:  # the manager only creates subshells on the shell channel thread
                try:
                    created.append(manager._create_subshell())
                finally:
                    done.set()

            manager._shell_channel_io_loop.add_callback(create)
            if not done.wait(10) or not created:
                return None
        except Exception:  # not an ipykernel, or one without subshells
            return None
        _subshell.append(created[0])
        return created[0]


def route_to(widget, subshell_id: str) -> None:
    """Send the frontend's messages for ``widget`` to that subshell's thread instead of the main shell."""
    # ipykernel asks each comm where its messages go; answering always with our subshell keeps them there even
    # after the widget itself publishes from the main thread.
    widget.comm._reply_subshell_for = lambda data, default: subshell_id
