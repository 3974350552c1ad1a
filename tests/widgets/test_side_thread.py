"""The Stop button's use of ipykernel's private subshell API is gated on the versions it was verified with."""

import ipykernel

from jupyter_dist.experiment import Experiment
from jupyter_dist.protocol import Objective
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.widgets import _side_thread
from jupyter_dist.widgets._live import LiveView


def test_only_verified_ipykernel_versions_pass_the_gate():
    for version in ("7.4.0", "7.4.2"):
        assert _side_thread.unverified_reason(version) is None
    for version in ("6.29.5", "7.3.1", "7.5.0", "8.0.0"):
        reason = _side_thread.unverified_reason(version)
        assert f"ipykernel {version} is not a version this button was verified with" in reason
        assert "interrupt the kernel" in reason


def _view() -> LiveView:
    return LiveView(Experiment(InMemoryRecord(ExperimentDefinition("hpo", "gate", Objective("acc")))))


def test_an_unverified_kernel_disables_the_stop_button_and_says_why(monkeypatch):
    monkeypatch.setattr(ipykernel, "__version__", "9.0.0")
    view = _view()
    view.start()
    assert view.stop_button.disabled
    assert view.stop_button.tooltip.startswith(
        "ipykernel 9.0.0 is not a version this button was verified with"
    )


def test_outside_a_kernel_a_verified_ipykernel_still_cannot_route_the_button(monkeypatch):
    monkeypatch.setattr(ipykernel, "__version__", _side_thread.VERIFIED_IPYKERNEL[0] + ".0")
    view = _view()
    view.start()
    assert view.stop_button.disabled and "interrupt the kernel" in view.stop_button.tooltip
