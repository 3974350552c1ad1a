"""What a training function sees: ``report()``, ``TrialPruned`` and the optional injected ``Reporter``
(defined with the trial context it wraps).

Inside a trial (on a Dask worker) ``report()`` sends each metric to the kernel and checks the trial's stop flag
(trials/_trial_context.py). Outside an experiment it does nothing, so the same function runs unchanged when
called directly.
"""

from __future__ import annotations

from typing import Any

from .errors import TrialPruned
from .trials import Reporter, current_trial

__all__ = ["Reporter", "TrialPruned", "report"]


def report(step: int | None = None, **metrics: Any) -> None:
    """Report metrics of the running trial, e.g. ``report(step=epoch, loss=0.3, val_acc=0.9)``.

    Values must be numbers (Python, numpy or 0-d torch). Without ``step`` the calls are numbered 0, 1, 2, ...
    Outside an experiment this does nothing. Raises ``TrialPruned`` once the trial should stop.
    """
    ctx = current_trial()
    if ctx is not None:
        ctx.report(step, metrics)
