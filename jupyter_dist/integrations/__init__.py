"""Report callbacks for training frameworks: their Trainer reports to ``jupyter_dist.report()`` by itself.

- ``jupyter_dist.integrations.lightning.ReportCallback``: PyTorch Lightning (``import lightning``)
- ``jupyter_dist.integrations.pytorch_lightning.ReportCallback``: the same for ``import pytorch_lightning``
- ``jupyter_dist.integrations.transformers.ReportCallback``: Hugging Face's ``Trainer``

And experiment trackers, ``jupyter_dist.Callback``s that send each run to them from the kernel:

- ``jupyter_dist.integrations.MLflow``: a parent MLflow run per experiment, a nested run per trial
- ``jupyter_dist.integrations.TensorBoard``: TensorBoard event files, a run per trial, with the hparams table

Nothing is imported here: ``import jupyter_dist`` stays free of the frameworks, and each module imports its own
framework when it is imported (an ImportError names the pip extra to install when the framework is missing). The
trackers are imported when first named; their client library when one is made.
"""

from __future__ import annotations

__all__ = ["MLflow", "TensorBoard"]

_TRACKERS = {"MLflow": "mlflow", "TensorBoard": "tensorboard"}


def __getattr__(name: str):
    if name in _TRACKERS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_TRACKERS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
