"""The Stop button's use of ipykernel's private subshell API is gated on the kernel having each piece of it, not on
its version. The button working mid-run in a kernel that has them is tested in a real kernel
(tests/test_notebooks.py) and in a real browser (tests/lab/test_cell_view.py)."""

import subprocess
import sys

import ipykernel
import pytest
from ipykernel.comm.comm import BaseComm

from jupyter_dist.experiment import Experiment
from jupyter_dist.protocol import Objective
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.widgets import _side_thread
from jupyter_dist.widgets._live import LiveView


def _view() -> LiveView:
    return LiveView(Experiment(InMemoryRecord(ExperimentDefinition("hpo", "gate", Objective("acc")))))


def test_the_installed_ipykernel_routes_comm_messages_to_a_subshell():
    assert _side_thread.comm_hook_missing() is None, ipykernel.__version__


def test_an_ipykernel_whose_comms_are_not_asked_where_to_go_disables_the_stop_button_and_says_why(
    monkeypatch,
):
    # An ipykernel release without the per-comm hook (or with another signature), whatever its version number.
    monkeypatch.delattr(BaseComm, "_reply_subshell_for")
    view = _view()
    view.start()
    assert view.stop_button.disabled
    assert view.stop_button.tooltip == (
        f"ipykernel {ipykernel.__version__} does not route a comm's messages to a subshell: "
        "interrupt the kernel to stop"
    )
    monkeypatch.setattr(BaseComm, "_reply_subshell_for", lambda self, data: None, raising=False)
    assert "does not route" in _side_thread.comm_hook_missing()


IN_PROCESS_KERNEL = """
from ipykernel.inprocess.manager import InProcessKernelManager
from jupyter_dist.widgets import _side_thread

manager = InProcessKernelManager()
manager.start_kernel()
try:  # a real ipykernel kernel with no shell channel thread, hence no subshells
    print(_side_thread.missing_capability(manager.kernel))
finally:
    manager.shutdown_kernel()
"""


def test_a_kernel_without_subshells_is_told_apart_from_one_with_them():
    # In a process of its own: an in-process kernel's shell is an IPython singleton, which another shell made
    # earlier in the test session (the magics' tests) would refuse.
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS_KERNEL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "this kernel has no subshells"


@pytest.mark.parametrize("lacks", ["_create_subshell", "_shell_channel_io_loop"])
def test_a_subshell_manager_without_what_is_used_of_it_is_refused(lacks):
    from ipykernel.subshell_manager import SubshellManager

    class Kernel:  # the attributes the check reads, around a real SubshellManager's class
        _supports_kernel_subshells = True

        class shell_channel_thread:  # noqa: N801
            manager = SubshellManager.__new__(SubshellManager)

    Kernel.shell_channel_thread.manager._shell_channel_io_loop = type("Loop", (), {"add_callback": print})()
    assert _side_thread.missing_capability(Kernel) is None
    if lacks == "_create_subshell":
        Kernel.shell_channel_thread.manager._create_subshell = lambda subshell_id: (
            subshell_id
        )  # another signature
    else:
        del Kernel.shell_channel_thread.manager._shell_channel_io_loop
    assert _side_thread.missing_capability(Kernel).startswith("this kernel's subshell manager")


def test_outside_a_kernel_an_ipykernel_with_the_hook_still_cannot_route_the_button():
    view = _view()
    view.start()
    assert view.stop_button.disabled and "interrupt the kernel" in view.stop_button.tooltip
