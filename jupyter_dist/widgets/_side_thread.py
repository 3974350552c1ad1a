"""Let chosen widgets be heard while the cell that shows them is still running.

A kernel handles a widget's messages (a click, a pick) on its main shell, which is busy running the experiment's
cell. ipykernel 7 has subshells: threads with their own message loop, and a per-comm hook that routes the comm's
messages to one. We create one subshell per kernel and route the live view's controls there, so the Stop button
works mid-run.

That takes ipykernel's private API (``SubshellManager._create_subshell``, ``_shell_channel_io_loop``,
``Comm._reply_subshell_for``), which may change in any release: rather than trust a version, the kernel is checked
for each piece as it is used here (``missing_capability``: present, and called with the arguments we pass). Where
one is missing the Stop button is disabled, its tooltip says which, and Kernel > Interrupt stops the run as
gracefully.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

_subshell: list[str] = []  # one per kernel process, made on first use
_lock = threading.Lock()
_STOP_OTHERWISE = "interrupt the kernel to stop"


def _takes(function: Any, parameters: list[str]) -> bool:
    """Whether ``function`` is a callable whose parameters (``self`` aside) are named ``parameters``."""
    if not callable(function):
        return False
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return names[1:] == parameters if names[:1] == ["self"] else names == parameters


def comm_hook_missing() -> str | None:
    """What the installed ipykernel lacks of the per-comm routing hook (None: it has it). ipykernel asks a comm
    where its messages go only in the versions whose comms define ``_reply_subshell_for(data, default)``."""
    try:
        import ipykernel
        from ipykernel.comm.comm import BaseComm
    except ImportError:
        return "not running in an ipykernel"
    if not _takes(getattr(BaseComm, "_reply_subshell_for", None), ["data", "default"]):
        return f"ipykernel {ipykernel.__version__} does not route a comm's messages to a subshell"
    return None


def missing_capability(kernel: Any) -> str | None:
    """What ``kernel`` lacks of the subshell API used here (None: it has all of it)."""
    if not getattr(kernel, "_supports_kernel_subshells", False):
        return "this kernel has no subshells"
    manager = getattr(getattr(kernel, "shell_channel_thread", None), "manager", None)
    if not _takes(getattr(manager, "_create_subshell", None), []):
        return "this kernel's subshell manager cannot create a subshell for us"
    if not callable(getattr(getattr(manager, "_shell_channel_io_loop", None), "add_callback", None)):
        return "this kernel's subshell manager has no shell channel loop to create it on"
    return comm_hook_missing()


def side_thread() -> tuple[str | None, str | None]:
    """(the id of this kernel's subshell for widget controls, None) or (None, why there is none)."""
    reason = comm_hook_missing()
    if reason:
        return None, f"{reason}: {_STOP_OTHERWISE}"
    from IPython import get_ipython

    with _lock:
        if _subshell:
            return _subshell[0], None
        try:
            kernel = get_ipython().kernel
            reason = missing_capability(kernel)
            if reason:
                return None, f"{reason}: {_STOP_OTHERWISE}"
            manager = kernel.shell_channel_thread.manager
            created: list[str] = []
            done = threading.Event()

            def create() -> None:  # the manager only creates subshells on the shell channel thread
                try:
                    created.append(manager._create_subshell())
                finally:
                    done.set()

            manager._shell_channel_io_loop.add_callback(create)
            if not done.wait(10) or not created:
                return None, "the kernel did not create a subshell in time: interrupt the kernel to stop"
        except Exception:  # not an ipykernel shell, or one without subshells
            return None, "this kernel cannot hear buttons mid-run: interrupt the kernel to stop"
        _subshell.append(created[0])
        return created[0], None


def route_to(widget, subshell_id: str) -> None:
    """Send the frontend's messages for ``widget`` to that subshell's thread instead of the main shell."""
    # ipykernel asks each comm where its messages go; answering always with our subshell keeps them there even
    # after the widget itself publishes from the main thread.
    widget.comm._reply_subshell_for = lambda data, default: subshell_id
