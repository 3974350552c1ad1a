"""Views of a running experiment: in JupyterLab with jupyter_dist's extension, a MIME bundle the extension draws;
in other notebooks the live ipywidgets view; text progress elsewhere."""

from __future__ import annotations

import os

from .._frontend import lab_extension_draws
from ..errors import ArgumentError
from ..experiment import Experiment
from ._base import ExperimentView
from ._busy import say_busy_while_the_cell_runs
from ._text import TextView

__all__ = [
    "ExperimentView",
    "TextView",
    "LiveView",
    "view_for",
    "preamble_for",
    "say_busy_while_the_cell_runs",
]

PROGRESS = ("auto", "lab", "widget", "text")


def check_progress(progress: object) -> None:
    """``progress=`` names a view (or is False or a callable, which need no check)."""
    if isinstance(progress, str) and progress not in PROGRESS:
        raise ArgumentError(f"progress={progress!r}: use one of {', '.join(PROGRESS)}, False, or a callable")


def __getattr__(name: str):
    if name == "LiveView":  # imports ipywidgets and plotly: only when asked for
        from ._live import LiveView

        return LiveView
    raise AttributeError(name)


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def resolve(progress: str, stored: bool) -> str:
    """Which view ``progress`` means here: "lab", "widget" or "text".

    "auto": ``JUPYTER_DIST_PROGRESS`` if set; else, in a kernel started by a Jupyter server that serves
    JupyterLab or Notebook 7 with this extension (jupyter_dist/_frontend.py), "lab"; in any other kernel
    "widget"; outside a kernel "text". The lab view follows the run through the store: a run that is not
    stored gets the widget.
    """
    check_progress(progress)
    if progress == "auto":
        progress = os.environ.get("JUPYTER_DIST_PROGRESS") or "auto"
    if progress == "auto":
        if not _in_kernel():
            return "text"
        progress = "lab" if lab_extension_draws() else "widget"
    if progress == "lab" and not stored:
        return "widget"
    return progress


def preamble_for(progress: str, stored: bool):
    """The cell's first output, shown before the cluster starts, for the views that draw in the cell."""
    if resolve(progress, stored) in ("lab", "widget") and _in_kernel():
        from ._lab import Preamble

        return Preamble()
    return None


def view_for(exp: Experiment, progress: str = "auto", preamble=None) -> ExperimentView:
    """The view ``progress`` means for ``exp`` (see ``resolve``); it takes over ``preamble``'s output."""
    kind = resolve(progress, exp.record.stored)
    if kind == "lab":
        from ._lab import LabView

        return LabView(exp, preamble)
    if kind == "widget":
        from ._live import LiveView

        return LiveView(exp, preamble)
    if preamble is not None:
        preamble.clear()
    return TextView(exp)
