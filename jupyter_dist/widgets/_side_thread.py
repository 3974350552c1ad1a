"""Let chosen widgets be heard while the cell that shows them is still running.

A kernel handles a widget's messages (a click, a pick) on its main shell, which is busy running the experiment's
cell. ipykernel 7 has subshells: threads with their own message loop, and a per-comm hook that routes the comm's
messages to one. We create one subshell per kernel and route the live view's controls there, so the Stop button
works mid-run.

That takes ipykernel's private API (``SubshellManager._create_subshell``, ``_shell_channel_io_loop``,
``Comm._reply_subshell_for``), which may change in any release: it is used only on the ipykernel versions it was
verified with (VERIFIED_IPYKERNEL). On any other the Stop button is disabled, its tooltip says why, and Kernel >
Interrupt stops the run as gracefully.
"""

from __future__ import annotations

import threading

# ipykernel major.minor versions whose private subshell API this was verified with, in a real browser.
VERIFIED_IPYKERNEL = ("7.4",)

_subshell: list[str] = []  # one per kernel process, made on first use
_lock = threading.Lock()


def unverified_reason(version: str) -> str | None:
    """Why ipykernel ``version`` cannot route the Stop button, or None when it is a verified one."""
    if ".".join(version.split(".")[:2]) in VERIFIED_IPYKERNEL:
        return None
    return (
        f"ipykernel {version} is not a version this button was verified with "
        f"({', '.join(VERIFIED_IPYKERNEL)}): interrupt the kernel to stop"
    )


def side_thread() -> tuple[str | None, str | None]:
    """(the id of this kernel's subshell for widget controls, None) or (None, why there is none)."""
    try:
        import ipykernel
        from IPython import get_ipython
    except ImportError:
        return None, "not running in an ipykernel: interrupt the kernel to stop"
    reason = unverified_reason(ipykernel.__version__)
    if reason:
        return None, reason
    with _lock:
        if _subshell:
            return _subshell[0], None
        try:
            kernel = get_ipython().kernel
            if not getattr(kernel, "_supports_kernel_subshells", False):
                return None, "this kernel has no subshells: interrupt the kernel to stop"
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
