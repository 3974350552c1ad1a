"""The Dask side: which cluster, running trials on workers, and the messages between kernel and workers.

Nothing here knows about IPython or widgets. The trial loop (_loop.py) knows nothing of Dask either: the
launcher (_launcher.py) is where trials meet the cluster.
"""

from ._by_reference import WithParameters, with_parameters
from ._cluster import (
    ClusterInfo,
    check_kernel_cuda,
    close_local_cluster,
    cluster_info,
    forget_cluster,
    get_client,
    use_cluster,
)
from ._collector import quiet_collector
from ._dashboard import dashboard_link
from ._devices import release_gpu_memory
from ._elastic import Elastic
from ._goals import Constraints, HookFailed, StopRule, check_target
from ._interrupts import StopSignal, interrupts_stop
from ._launcher import DaskLauncher
from ._loop import (
    RunningTrial,
    TrialLauncher,
    TrialLoop,
    TrialSink,
    TrialSource,
    TrialSpec,
    TrialWatcher,
)
from ._trial_context import Reporter, TrialContext, current_trial

__all__ = [
    "ClusterInfo",
    "Constraints",
    "check_kernel_cuda",
    "DaskLauncher",
    "Elastic",
    "HookFailed",
    "Reporter",
    "RunningTrial",
    "StopRule",
    "StopSignal",
    "TrialContext",
    "TrialLauncher",
    "TrialLoop",
    "TrialSink",
    "TrialSource",
    "TrialSpec",
    "TrialWatcher",
    "check_target",
    "close_local_cluster",
    "cluster_info",
    "current_trial",
    "dashboard_link",
    "forget_cluster",
    "get_client",
    "interrupts_stop",
    "quiet_collector",
    "release_gpu_memory",
    "use_cluster",
    "WithParameters",
    "with_parameters",
]
