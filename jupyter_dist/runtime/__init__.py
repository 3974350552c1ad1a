"""The Dask side: which cluster, running trials on workers, and the messages between kernel and workers.

Nothing here knows about IPython or widgets.
"""

from ._cluster import ClusterError, close_local_cluster, get_client, worker_threads
from ._gang import PlacementError
from ._scheduler import TrialFunctionError, TrialScheduler, TrialSink, TrialSource

__all__ = [
    "ClusterError",
    "PlacementError",
    "TrialFunctionError",
    "TrialScheduler",
    "TrialSink",
    "TrialSource",
    "close_local_cluster",
    "get_client",
    "worker_threads",
]
