"""jupyter_dist: run a notebook training function as HPO trials, an ablation study or data-parallel
training on Dask, live in Jupyter.

``%load_ext jupyter_dist`` registers the ``%%distribute`` magic; the Python API below is what it calls.
"""

from __future__ import annotations

from . import space
from .ablation import AblationError, AblationExperiment, ablate
from .api import ablation, data_parallel, hpo
from .ddp import DataParallelExperiment, RendezvousError, is_main, prepare, rank, unwrap, world_size
from .experiment import Best, Experiment, ExperimentFailed, MetricError
from .report import Reporter, TrialPruned, report
from .runtime import ClusterError, PlacementError, TrialFunctionError, close_local_cluster, get_client
from .space import SearchSpaceError

__version__ = "0.3.1"

__all__ = [
    "AblationError",
    "AblationExperiment",
    "Best",
    "DataParallelExperiment",
    "ClusterError",
    "Experiment",
    "ExperimentFailed",
    "MetricError",
    "PlacementError",
    "RendezvousError",
    "Reporter",
    "SearchSpaceError",
    "TrialFunctionError",
    "TrialPruned",
    "ablate",
    "ablation",
    "close_local_cluster",
    "data_parallel",
    "get_client",
    "hpo",
    "is_main",
    "load_ipython_extension",
    "prepare",
    "rank",
    "report",
    "space",
    "unwrap",
    "world_size",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_dist``: register the magics (imported here so importing the package stays cheap)."""
    from .magics import DistributeMagics

    ipython.register_magics(DistributeMagics)
