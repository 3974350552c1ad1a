"""A PyTorch Lightning callback that reports the Trainer's logged metrics to jupyter_dist (``import pytorch_lightning``).

The same callback as ``jupyter_dist.integrations.lightning.ReportCallback`` (documented there), for the older
``pytorch_lightning`` package, whose Trainer accepts only its own ``Callback`` class.
"""

from __future__ import annotations

from ._lightning_hooks import LightningReporting
from ._lightning_ranks import DataParallelRanks
from ._metrics import import_framework

__all__ = ["DataParallelEnvironment", "ReportCallback"]

_pl = import_framework(
    "pytorch_lightning", "pytorch-lightning", "jupyter_dist.integrations.pytorch_lightning"
)


class ReportCallback(LightningReporting, _pl.Callback):  # type: ignore[name-defined]  # the framework's class: imported by name
    """Report the Trainer's logged metrics with ``jupyter_dist.report()``; stop training when the trial is pruned.

    ``pytorch_lightning.Trainer(callbacks=[ReportCallback()])``; the parameters and behaviour are those of
    ``jupyter_dist.integrations.lightning.ReportCallback``.
    """


class DataParallelEnvironment(DataParallelRanks, _pl.plugins.ClusterEnvironment):  # type: ignore[name-defined]  # the framework's class: imported by name
    """The cluster environment of a ``pytorch_lightning.Trainer`` inside ``jupyter_dist.data_parallel()``; see
    ``jupyter_dist.integrations.lightning.DataParallelEnvironment``."""
