"""jupyter_dist: run a notebook training function as HPO trials on Dask, streaming live into Jupyter.

``%load_ext jupyter_dist`` registers the ``%%distribute`` magic; the Python API below is what it calls.
"""

from __future__ import annotations

from . import space
from .api import hpo
from .experiment import Best, Experiment, ExperimentFailed, MetricError
from .report import Reporter, TrialPruned, report
from .runtime import ClusterError, TrialFunctionError, close_local_cluster, get_client
from .space import SearchSpaceError

__version__ = "0.2.0"

__all__ = [
    "Best",
    "ClusterError",
    "Experiment",
    "ExperimentFailed",
    "MetricError",
    "Reporter",
    "SearchSpaceError",
    "TrialFunctionError",
    "TrialPruned",
    "close_local_cluster",
    "get_client",
    "hpo",
    "load_ipython_extension",
    "report",
    "space",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_dist``: register the magics (imported here so importing the package stays cheap)."""
    from .magics import DistributeMagics

    ipython.register_magics(DistributeMagics)
