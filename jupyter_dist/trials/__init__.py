"""The trials' side: the trial loop (dispatch, stop, timeout, pruning; no Dask in it), the launcher that runs
trials as Dask tasks, and what runs on the workers (the runner, the trial context, the outbox to the kernel).

Nothing here knows about IPython or widgets. The trial loop (_loop.py) knows nothing of Dask either: the
launcher (_launcher.py) is where trials meet the cluster (``jupyter_dist.cluster`` hands it the client).
"""

from ._by_reference import WithParameters, with_parameters
from ._collector import quiet_collector
from ._devices import release_gpu_memory
from ._elastic import Elastic
from ._goals import Constraints, StopRule, check_target
from ._interrupts import StopSignal, interrupts_stop
from ._launcher import DaskLauncher
from ._local_trial import run_again
from ._loop import TrialLoop
from ._seams import RunningTrial, TrialLauncher, TrialSink, TrialSource, TrialSpec, TrialWatcher
from ._trial_context import Reporter, TrialContext, current_trial

__all__ = [
    "Constraints",
    "DaskLauncher",
    "Elastic",
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
    "WithParameters",
    "check_target",
    "current_trial",
    "interrupts_stop",
    "quiet_collector",
    "run_again",
    "release_gpu_memory",
    "with_parameters",
]
