"""Every exception jupyter_dist raises, rooted in ``JupyterDistError`` (as Optuna roots its errors in
``OptunaError``), so ``except jupyter_dist.JupyterDistError`` catches all of ours and none of the user's.

Each class also derives from the builtin a caller would have caught before (``ValueError`` for bad input,
``RuntimeError`` for a cluster that cannot serve), so code written against earlier versions keeps working.

The package exports (``jupyter_dist.X``) the ones a caller of the API can catch. ``MetricError``, ``ClusterLost`` and
``HookFailed`` end a run inside the trial loop, which turns them into ``ExperimentFailed``; ``RendezvousError`` is raised in a
data-parallel rank on a worker and reaches the kernel as the failed trial's traceback: they are importable from
here only.

``TrialPruned`` lives here too but is deliberately *not* an error: it is the stop signal ``report()`` raises in a
trial, a ``BaseException`` like ``KeyboardInterrupt``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AblationError",
    "ArgumentError",
    "ClusterError",
    "ClusterLost",
    "ExperimentFailed",
    "JupyterDistError",
    "MetricError",
    "NoResultError",
    "NotInStore",
    "NotRunning",
    "PlacementError",
    "RendezvousError",
    "SearchSpaceError",
    "StoreError",
    "TrialFunctionError",
    "TrialPruned",
]


class JupyterDistError(Exception):
    """The base of every exception jupyter_dist raises."""


class ArgumentError(JupyterDistError, ValueError, TypeError):
    """An argument of the API or the magic that cannot work: the message names it, its value and the fix.

    Both a ValueError and a TypeError, as the builtins it replaces were (a wrong value or a wrong type)."""


class NoResultError(JupyterDistError, ValueError):
    """A result asked for that the experiment does not have (yet): no completed trial, no data-parallel result."""


class SearchSpaceError(JupyterDistError, ValueError):
    """A search space that cannot be searched, or that does not fit the training function."""


class AblationError(JupyterDistError, ValueError):
    """An ablation study that cannot run as asked: bad components, or a removal the model cannot take.

    Raised before any work starts for a malformed study, and inside a trial when the model does not fit the
    study (a module it lacks, ``ablate()`` never called); such a trial's outcome says so with
    ``ErrorKind.SETUP``, and the study starts no more trials."""


class MetricError(JupyterDistError, ValueError):
    """The training function neither returns nor reports the metric the experiment optimises."""


class ClusterError(JupyterDistError, RuntimeError):
    """The Dask cluster asked for cannot be reached or used."""


class StoreError(JupyterDistError, RuntimeError):
    """The experiment store cannot be used: a file that is not a store, a newer schema, a name taken."""


class NotInStore(StoreError, LookupError):
    """The store has no such experiment or trial (or no file yet). Also a LookupError: the server extension
    answers it with 404."""


class NotRunning(JupyterDistError, RuntimeError):
    """A stop asked (through the store, as JupyterLab's Stop button does) of an experiment that has ended; the
    server extension answers it with 409."""


class ClusterLost(ClusterError):
    """The cluster went away while an experiment ran (the scheduler stopped answering)."""


class HookFailed(JupyterDistError, RuntimeError):
    """A function the user gave the run (a callback's hook, a stop rule) raised: the run fails with this message,
    which names it, and the user's exception as its cause. It never reaches a caller (the run ends as
    ``ExperimentFailed``), so it is not in ``__all__``."""


class PlacementError(JupyterDistError, RuntimeError):
    """The cluster has too few workers (with the resources asked for) for one data-parallel trial."""


class RendezvousError(JupyterDistError, RuntimeError):
    """Not every rank of a data-parallel job joined in time."""


class TrialFunctionError(JupyterDistError, RuntimeError):
    """The training function cannot run on the workers at all (e.g. a module they cannot import)."""


class ExperimentFailed(JupyterDistError, RuntimeError):
    """Every trial failed, or the experiment could not go on; ``.experiment`` keeps what was recorded."""

    def __init__(self, message: str, experiment: Any) -> None:
        super().__init__(message)
        self.experiment = experiment


class TrialPruned(BaseException):
    """Raised by ``report()`` once the trial has been pruned or its experiment stopped.

    It derives from ``BaseException``, like ``KeyboardInterrupt``, on purpose: training loops often wrap a step
    in ``except Exception`` to log and carry on, and that must not swallow the stop. Let it propagate (or
    re-raise it); the runner records the trial as pruned/stopped with its last reported values.
    """
