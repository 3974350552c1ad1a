"""Views of a running experiment: the live ipywidgets view in a notebook, text progress elsewhere."""

from __future__ import annotations

import os

from ..errors import ArgumentError
from ..experiment import Experiment
from ._base import ExperimentView
from ._text import TextView

__all__ = ["ExperimentView", "TextView", "LiveView", "view_for"]

PROGRESS = ("auto", "widget", "text")


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


def view_for(exp: Experiment, progress: str = "auto") -> ExperimentView:
    """``"widget"``, ``"text"``, or ``"auto"``: the widget inside a Jupyter kernel, text anywhere else.

    ``JUPYTER_DIST_PROGRESS=text`` (or ``widget``) overrides "auto", e.g. for a frontend without widgets.
    """
    if progress not in PROGRESS:
        raise ArgumentError(f"progress={progress!r}: use one of {', '.join(PROGRESS)}, False, or a callable")
    if progress == "auto":
        progress = os.environ.get("JUPYTER_DIST_PROGRESS") or ("widget" if _in_kernel() else "text")
    if progress == "widget":
        from ._live import LiveView

        return LiveView(exp)
    return TextView(exp)
