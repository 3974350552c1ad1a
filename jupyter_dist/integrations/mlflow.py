"""MLflow: the callback that sends each experiment, as it runs, to MLflow (the writing itself:
``jupyter_dist.tracking.mlflow``)."""

from __future__ import annotations

import sys
from typing import Any

from ..tracking._events import ExperimentInfo, require
from ..tracking.mlflow import EXTRA, MlflowDestination, to_mlflow
from ._tracking import TrackingCallback

__all__ = ["MLflow", "to_mlflow"]


class MLflow(TrackingCallback):
    """Send each experiment, as it runs, to an MLflow tracking server: ``hpo(..., callbacks=[MLflow(...)])``
    (also ``ablation()``, ``data_parallel()``, ``pbt()``), or for every run with dask config
    ``jupyter_dist.tracking.mlflow``.

    The experiment is a parent run (named as the experiment; tags ``jupyter_dist.experiment_id``,
    ``jupyter_dist.kind``, ``jupyter_dist.state``, ``jupyter_dist.best_trial_id``, ``jupyter_dist.best_value``);
    each trial a run nested under it (``mlflow.parentRunId``) with its parameters as params, every reported
    metric at its step, its state as tag ``jupyter_dist.state`` and as the run's status (completed: FINISHED,
    failed: FAILED, pruned / stopped / interrupted: KILLED), its start and end times, and its output (stdout,
    stderr, traceback) as the artifact ``output.txt``. The best trial is tagged ``jupyter_dist.best=true`` (with
    several objectives, the Pareto front's trials ``jupyter_dist.pareto=true``).

    The hooks only queue; a process of its own, started by the kernel for each experiment at the lowest CPU
    priority, writes to the server in batches (``log_batch``) about once a second, so neither a slow server nor
    the export's own work slows the experiment. The run's end does not wait for the export either: the process
    sends the rest on its own time, and ``MLflow.wait(exp, timeout)`` (or ``MLflow.wait()``, every MLflow export
    of the kernel) waits until it is all there. A server that fails or cannot be reached is reported once (a
    ``RuntimeWarning`` naming it and the error, from a hook, the run's end or ``wait()``), the rest of that
    experiment is not sent, and the experiment runs on, complete in jupyter_dist's store (``exp.to_mlflow()``
    sends it later).

    Parameters
    ----------
    tracking_uri
        The tracking server (``http://host:5000``) or any URI MLflow takes (``sqlite:///mlflow.db``); None:
        MLflow's own default (``MLFLOW_TRACKING_URI``).
    experiment
        The MLflow experiment the runs go to (made if it does not exist); None: one named as the jupyter_dist
        experiment.
    timeout
        How long an export still going when the kernel exits (or dies) may take to write the rest, in seconds;
        then its process ends and stderr says so. How long one request retries is MLflow's to say
        (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_TIMEOUT``, read in the kernel's environment as
        the experiment starts).
    """

    def __init__(self, tracking_uri: str | None = None, experiment: str | None = None, timeout: float = 10.0):
        require("mlflow", EXTRA, "jupyter_dist.integrations.MLflow")
        super().__init__(timeout)
        self.tracking_uri = tracking_uri
        self.experiment = experiment

    @property
    def where(self) -> str:
        return f"MLflow tracking server {self.tracking_uri or '(MLflow default)'}"

    def destination(self, experiment: ExperimentInfo) -> tuple[str, dict[str, Any]]:
        uri = self.tracking_uri
        if (
            uri is None and "mlflow" in sys.modules
        ):  # mlflow.set_tracking_uri() in the notebook: the process's too
            uri = sys.modules["mlflow"].get_tracking_uri()
        kwargs = {"tracking_uri": uri, "experiment": self.experiment or experiment.name}
        return f"{MlflowDestination.__module__}:MlflowDestination", kwargs

    def __repr__(self) -> str:
        return f"MLflow(tracking_uri={self.tracking_uri!r}, experiment={self.experiment!r})"
