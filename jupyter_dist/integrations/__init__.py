"""Report callbacks for training frameworks: their Trainer reports to ``jupyter_dist.report()`` by itself.

- ``jupyter_dist.integrations.lightning.ReportCallback``: PyTorch Lightning (``import lightning``)
- ``jupyter_dist.integrations.pytorch_lightning.ReportCallback``: the same for ``import pytorch_lightning``
- ``jupyter_dist.integrations.transformers.ReportCallback``: Hugging Face's ``Trainer``

Nothing is imported here: ``import jupyter_dist`` stays free of the frameworks, and each module imports its own
framework when it is imported (an ImportError names the pip extra to install when the framework is missing).
"""

from __future__ import annotations
