"""The Dask cluster a kernel's experiments run on: the embedded local cluster by default, one at an address, the
user's Dask Gateway cluster, or Slurm worker jobs (``slurm/``); their sizing and dashboard link.

Nothing here knows about trials: ``jupyter_dist.trials`` runs them on the client this package hands out.
"""

from ._current import (
    NAMED_CLUSTERS,
    check_kernel_cuda,
    close_local_cluster,
    cluster_info,
    fit_gpu_workers,
    forget_cluster,
    get_client,
    use_cluster,
)
from ._dashboard import dashboard_link
from ._growth import WorkersHeld, hold_workers
from ._info import ClusterInfo

__all__ = [
    "NAMED_CLUSTERS",
    "ClusterInfo",
    "WorkersHeld",
    "check_kernel_cuda",
    "close_local_cluster",
    "cluster_info",
    "dashboard_link",
    "fit_gpu_workers",
    "forget_cluster",
    "get_client",
    "hold_workers",
    "use_cluster",
]
