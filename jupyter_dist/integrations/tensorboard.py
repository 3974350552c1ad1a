"""TensorBoard: the callback that sends each experiment, as it runs, to TensorBoard (the writing itself:
``jupyter_dist.tracking.tensorboard``)."""

from __future__ import annotations

import os
from typing import Any

from ..tracking._events import ExperimentInfo, require
from ..tracking.tensorboard import EXTRA, TensorBoardDestination, to_tensorboard
from ._tracking import TrackingCallback

__all__ = ["TensorBoard", "to_tensorboard"]


class TensorBoard(TrackingCallback):
    """Write each experiment, as it runs, as TensorBoard event files: ``hpo(..., callbacks=[TensorBoard(...)])``
    (also ``ablation()``, ``data_parallel()``, ``pbt()``), or for every run with dask config
    ``jupyter_dist.tracking.tensorboard``; then ``tensorboard --logdir LOG_DIR``.

    Each trial is a run, ``LOG_DIR/<experiment name>/trial-<id>``: every reported metric as a scalar at its step,
    its value as the scalar ``jupyter_dist/value``, its output as text (``output``), and the hparams plugin's
    summaries, so the HPARAMS tab tables the trials: their parameters (and labels, such as an ablation's
    ``ablated``), their state, the last value of each metric, and the session's status (completed: success,
    failed: failure, pruned / stopped / interrupted: unknown).

    The hooks only queue: a process of its own, started by the kernel for each experiment at the lowest CPU
    priority, writes the files in batches about once a second. The run's end does not wait for it:
    ``TensorBoard.wait(exp, timeout)`` (or ``TensorBoard.wait()``, every TensorBoard export of the kernel) waits
    until everything is on disk. A failure to write is reported once (a ``RuntimeWarning``) while the experiment
    runs on, complete in jupyter_dist's store.

    Parameters
    ----------
    log_dir
        The folder TensorBoard is pointed at (``tensorboard --logdir``); made if missing. A relative one is taken
        from the kernel's working folder as the experiment starts.
    timeout
        How long an export still going when the kernel exits (or dies) may take to write the rest, in seconds.
    """

    def __init__(self, log_dir: str | os.PathLike = "runs", timeout: float = 10.0):
        require("tensorboard", EXTRA, "jupyter_dist.integrations.TensorBoard")
        super().__init__(timeout)
        self.log_dir = os.fspath(log_dir)

    @property
    def where(self) -> str:
        return f"TensorBoard log folder {self.log_dir}"

    def destination(self, experiment: ExperimentInfo) -> tuple[str, dict[str, Any]]:
        return f"{TensorBoardDestination.__module__}:TensorBoardDestination", {
            "log_dir": os.path.abspath(self.log_dir)
        }

    def __repr__(self) -> str:
        return f"TensorBoard(log_dir={self.log_dir!r})"
