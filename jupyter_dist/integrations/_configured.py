"""The trackers dask config turns on for every run (``jupyter_dist.tracking.mlflow`` / ``.tensorboard``)."""

from __future__ import annotations

from .._callbacks import Callback

__all__ = ["configured_trackers"]


def configured_trackers(given: tuple[Callback, ...]) -> tuple[Callback, ...]:
    """``given`` and the experiment trackers dask config sets for every run (``jupyter_dist.tracking``), each of
    them only where ``given`` has none of its kind: one passed in ``callbacks=`` is the one that runs."""
    import dask.config

    settings = dask.config.get("jupyter_dist.tracking", default=None) or {}
    mlflow = settings.get("mlflow") or {}
    tensorboard = settings.get("tensorboard") or {}
    wanted: list[Callback] = []
    if mlflow.get("tracking-uri") or mlflow.get("experiment"):
        from .mlflow import MLflow

        if not any(isinstance(c, MLflow) for c in given):
            wanted.append(
                MLflow(tracking_uri=mlflow.get("tracking-uri"), experiment=mlflow.get("experiment"))
            )
    if tensorboard.get("log-dir"):
        from .tensorboard import TensorBoard

        if not any(isinstance(c, TensorBoard) for c in given):
            wanted.append(TensorBoard(log_dir=tensorboard["log-dir"]))
    return (*given, *wanted)
