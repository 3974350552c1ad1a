"""Experiments to MLflow: a parent run per experiment, a nested run per trial (``pip install 'jupyter_dist[mlflow]'``).

Written by an export process the kernel starts (``_export_process``), through ``MlflowClient`` with explicit run
ids, so the workers need no access to the tracking server and the kernel never imports mlflow for a live run.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._events import (
    Destination,
    Event,
    ExperimentEnded,
    ExperimentInfo,
    ExperimentStarted,
    Reported,
    TrialEnded,
    TrialInfo,
    TrialStarted,
    events_of,
    export,
    require,
)

if TYPE_CHECKING:
    from ._events import Tracked

__all__ = ["MlflowDestination", "to_mlflow"]

EXTRA = "jupyter_dist[mlflow]"
# A trial's run status in MLflow, by its state: only a trial that ran to its end finished; pruned, stopped and
# interrupted ones were ended from outside.
STATUS = {"completed": "FINISHED", "failed": "FAILED", "running": "RUNNING"}
EXPERIMENT_STATUS = {"completed": "FINISHED", "failed": "FAILED", "running": "RUNNING"}
OUTPUT_FILE = "output.txt"
# MLflow's limits: a log_batch request holds at most 1000 metrics and 100 params and 100 tags; a param's value is
# at most 6000 characters (500 before MLflow 2.x's servers), a tag's 8000.
MAX_METRICS, MAX_PARAMS_TAGS, MAX_PARAM_CHARS, MAX_TAG_CHARS = 1000, 100, 6000, 8000
# The characters MLflow takes in a metric's, param's or tag's name; others become "_".
_NOT_A_KEY_CHARACTER = re.compile(r"[^\w\-. :/]")


def to_mlflow(exp: Tracked, tracking_uri: str | None = None, experiment: str | None = None) -> str:
    """``exp.to_mlflow()``: the experiment's runs written now, on this thread (an error raises); the parent
    run's id."""
    require("mlflow", EXTRA, "Experiment.to_mlflow")
    destination = MlflowDestination(tracking_uri, experiment or exp.name)
    export(destination, events_of(exp))
    assert destination.parent is not None  # its experiment started
    return destination.parent


class MlflowDestination(Destination):
    """The runs of one experiment in an MLflow experiment."""

    def __init__(self, tracking_uri: str | None, experiment: str) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param, RunStatus, RunTag

        self._Metric, self._Param, self._RunTag, self._RunStatus = Metric, Param, RunTag, RunStatus
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.experiment = experiment
        self.experiment_id: str | None = None
        self.parent: str | None = None
        self.runs: dict[int, str] = {}  # trial id -> its run
        self.open: set[int] = set()  # trials whose run is not terminated
        # What is gathered for each run until the next request: metrics, params, tags.
        self._pending: dict[str, tuple[list, list, list]] = {}
        self._early: dict[int, list[Reported]] = {}

    def write(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, Reported):
                run = self.runs.get(event.trial_id)
                if run is None:  # heard on Dask's thread before the loop's trial start: kept until then
                    self._early.setdefault(event.trial_id, []).append(event)
                    continue
                metrics, Metric = self._batch(run)[0], self._Metric
                for step, values, at in event.rows:
                    ms, step = _ms(at), int(step)
                    metrics.extend(Metric(_key(k), float(v), ms, step) for k, v in values.items())
            elif isinstance(event, TrialStarted):
                self._trial_started(event.trial)
            elif isinstance(event, TrialEnded):
                self._trial_ended(event.trial)
            elif isinstance(event, ExperimentStarted):
                self._experiment_started(event.experiment)
            elif isinstance(event, ExperimentEnded):
                self._experiment_ended(event)
        self._send()

    def _experiment_started(self, info: ExperimentInfo) -> None:
        found = self.client.get_experiment_by_name(self.experiment)
        if found is None:
            try:
                self.experiment_id = self.client.create_experiment(self.experiment)
            except Exception:  # made meanwhile by another kernel: use it
                found = self.client.get_experiment_by_name(self.experiment)
                if found is None:
                    raise
        if found is not None:
            self.experiment_id = found.experiment_id
        tags = {
            "jupyter_dist.experiment_id": info.id,
            "jupyter_dist.kind": info.kind,
            "jupyter_dist.state": "running",
        }
        if info.metrics:
            tags["jupyter_dist.metric"] = ",".join(info.metrics)
            tags["jupyter_dist.mode"] = ",".join(info.modes)
        assert self.experiment_id is not None  # found or made above
        run = self.client.create_run(
            self.experiment_id, start_time=_ms(info.started), tags=tags, run_name=info.name
        )
        self.parent = run.info.run_id

    def _trial_started(self, trial: TrialInfo) -> None:
        if trial.trial_id in self.runs:  # a stored trial run again by a resumed experiment
            return
        tags = {
            "mlflow.parentRunId": self.parent,
            "jupyter_dist.trial_id": str(trial.trial_id),
            "jupyter_dist.state": "running",
            **{_key(k): _text(v, MAX_TAG_CHARS) for k, v in trial.labels.items()},
        }
        assert self.experiment_id is not None  # the experiment started first
        run = self.client.create_run(
            self.experiment_id, start_time=_ms(trial.started), tags=tags, run_name=f"trial-{trial.trial_id}"
        )
        run_id = self.runs[trial.trial_id] = run.info.run_id
        self.open.add(trial.trial_id)
        params = self._batch(run_id)[1]
        params.extend(self._Param(_key(k), _text(v, MAX_PARAM_CHARS)) for k, v in trial.params.items())
        self.write(self._early.pop(trial.trial_id, ()))

    def _trial_ended(self, trial: TrialInfo) -> None:
        run_id = self.runs.get(trial.trial_id)
        if run_id is None:
            return
        tags = {"jupyter_dist.state": trial.state, "jupyter_dist.attempts": str(trial.attempts)}
        if trial.value is not None:
            tags["jupyter_dist.value"] = repr(float(trial.value))
        if trial.duration is not None:
            tags["jupyter_dist.duration"] = f"{trial.duration:.3f}"
        self._batch(run_id)[2].extend(self._RunTag(k, v) for k, v in tags.items())
        self._send(run_id)  # before the run is terminated
        if trial.logs:
            self.client.log_text(run_id, trial.logs, OUTPUT_FILE)
        self._terminate(run_id, STATUS.get(trial.state, "KILLED"), trial.ended)
        self.open.discard(trial.trial_id)

    def _experiment_ended(self, event: ExperimentEnded) -> None:
        tags: dict[str, str] = {"jupyter_dist.state": event.state}
        if event.best is not None:
            trial_id, value = event.best
            tags.update({"jupyter_dist.best_trial_id": str(trial_id), "jupyter_dist.best_value": repr(value)})
            if trial_id in self.runs:
                self.client.set_tag(self.runs[trial_id], "jupyter_dist.best", "true")
        for trial_id in event.pareto:
            if trial_id in self.runs:
                self.client.set_tag(self.runs[trial_id], "jupyter_dist.pareto", "true")
        # Trials still running when the experiment ended (a failed run) were ended with it.
        for trial_id in sorted(self.open):
            self._send(self.runs[trial_id])
            self._terminate(self.runs[trial_id], "KILLED", event.ended)
        self.open.clear()
        assert self.parent is not None  # the experiment started first
        self._batch(self.parent)[2].extend(self._RunTag(k, v) for k, v in tags.items())
        self._send(self.parent)
        self._terminate(self.parent, EXPERIMENT_STATUS.get(event.state, "KILLED"), event.ended)

    def _batch(self, run_id: str) -> tuple[list, list, list]:
        batch = self._pending.get(run_id)
        if batch is None:
            batch = self._pending[run_id] = ([], [], [])
        return batch

    def _send(self, run_id: str | None = None) -> None:
        """What is gathered (for ``run_id``, or every run) as log_batch requests within MLflow's limits."""
        for run in [run_id] if run_id is not None else list(self._pending):
            metrics, params, tags = self._pending.pop(run, ([], [], []))
            while metrics or params or tags:
                self.client.log_batch(
                    run,
                    metrics=metrics[:MAX_METRICS],
                    params=params[:MAX_PARAMS_TAGS],
                    tags=tags[:MAX_PARAMS_TAGS],
                )
                metrics, params = metrics[MAX_METRICS:], params[MAX_PARAMS_TAGS:]
                tags = tags[MAX_PARAMS_TAGS:]

    def _terminate(self, run_id: str, status: str, at: float) -> None:
        # MlflowClient.set_terminated also reads the run back to print a "View run" link to stdout (the kernel's
        # cell, once per trial); the store's update_run_info is the one request it makes for the change itself.
        store = getattr(getattr(self.client, "_tracking_client", None), "store", None)
        if store is None or not hasattr(store, "update_run_info"):
            self.client.set_terminated(run_id, status, end_time=_ms(at))
            return
        store.update_run_info(run_id, self._RunStatus.from_string(status), _ms(at), None)


def _ms(seconds: float) -> int:
    return int((seconds if seconds else time.time()) * 1000)


def _key(name: Any) -> str:
    return _NOT_A_KEY_CHARACTER.sub("_", str(name))[:250] or "_"


def _text(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
    return text[:limit]
