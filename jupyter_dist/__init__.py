"""jupyter_dist: run a notebook training function as HPO trials, population-based training, an ablation study
or data-parallel training on Dask, live in Jupyter.

``%load_ext jupyter_dist`` registers the ``%%distribute`` magic; the Python API below is what it calls.
"""

from . import _config, space  # noqa: F401 - _config: dask config defaults, loaded first
from ._callbacks import Callback
from ._report import Reporter, report
from ._version import __version__ as __version__
from .ablation import AblationExperiment, ablate
from .api import (
    Comparison,
    ablation,
    cluster_info,
    compare,
    data_parallel,
    experiments,
    hpo,
    load,
    pbt,
    use_cluster,
)
from .checkpoints import Checkpoint, checkpoint, restore
from .cluster import close_local_cluster, forget_cluster, get_client
from .ddp import (
    backward,
    devices,
    gather,
    gather_for_metrics,
    is_main,
    prepare,
    rank,
    unwrap,
    world_size,
)
from .errors import (
    AblationError,
    ArgumentError,
    ClusterError,
    ExperimentFailed,
    JupyterDistError,
    NoResultError,
    NotInStore,
    PlacementError,
    SearchSpaceError,
    StoreError,
    TrialFunctionError,
    TrialPruned,
)
from .experiment import Best, DataParallelExperiment, Experiment
from .population import PopulationExperiment
from .protocol import Direction, ExperimentState, TrialState
from .trials import with_parameters

__all__ = [
    "AblationError",
    "AblationExperiment",
    "ArgumentError",
    "Best",
    "Callback",
    "Checkpoint",
    "ClusterError",
    "Comparison",
    "DataParallelExperiment",
    "Direction",
    "Experiment",
    "ExperimentFailed",
    "ExperimentState",
    "JupyterDistError",
    "NoResultError",
    "NotInStore",
    "PlacementError",
    "PopulationExperiment",
    "Reporter",
    "SearchSpaceError",
    "StoreError",
    "TrialFunctionError",
    "TrialPruned",
    "TrialState",
    "ablate",
    "ablation",
    "backward",
    "checkpoint",
    "cluster_info",
    "close_local_cluster",
    "forget_cluster",
    "compare",
    "data_parallel",
    "devices",
    "experiments",
    "gather",
    "gather_for_metrics",
    "get_client",
    "hpo",
    "is_main",
    "load",
    "load_ipython_extension",
    "pbt",
    "prepare",
    "rank",
    "report",
    "restore",
    "space",
    "unwrap",
    "use_cluster",
    "with_parameters",
    "world_size",
]


# Exported until 0.4, though no call of the API raises them: the loop's MetricError and ClusterLost end a run as
# ExperimentFailed, a rank's RendezvousError reaches the kernel as a failed trial's traceback. ``from jupyter_dist
# import MetricError`` keeps working for code written then; they live on in jupyter_dist.errors.
_NOT_EXPORTED = ("ClusterLost", "MetricError", "RendezvousError")


# The subpackages a user imports from (jupyter_dist.integrations.MLflow, jupyter_dist.errors.MetricError);
# the rest are the package's own layers.
PUBLIC_SUBPACKAGES = ("errors", "integrations", "space")


def __dir__() -> list[str]:
    """What a user finds here: the API (``__all__``) and the public subpackages, not the package's inner modules."""
    return sorted({*__all__, *PUBLIC_SUBPACKAGES, "__version__"})


def __getattr__(name: str):
    if name in _NOT_EXPORTED:
        from . import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'jupyter_dist' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_dist``: register the magics (imported here so importing the package stays cheap)."""
    from .magics import DistributeMagics

    ipython.register_magics(DistributeMagics)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The jupyter-server extension (jupyter_dist.server), enabled on install."""
    return [{"module": "jupyter_dist"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from .server import load_extension  # jupyter_server only when a server loads it

    load_extension(serverapp)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The JupyterLab extension built into jupyter_dist/labextension (for ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "jupyter-dist"}]
