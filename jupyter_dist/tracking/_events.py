"""What the experiment trackers (MLflow, TensorBoard) share: a run told as a sequence of events, those events as
plain lists for the pipe to the export process (``_export_process``), the same events made from a finished or
stored experiment (``Tracked``: what the export reads of one), and the writers' interface (``Destination``).
"""

from __future__ import annotations

import importlib.util
import math
import numbers
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from ..store import ExperimentRecord, TrialRecord

__all__ = ["Destination", "Tracked", "events_of", "export", "require"]


class Tracked(Protocol):
    """What the export reads of an experiment: ``jupyter_dist.Experiment`` is one. A Protocol, so this layer,
    below the experiment's, needs nothing of it."""

    @property
    def record(self) -> ExperimentRecord: ...
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def started(self) -> float: ...
    @property
    def ended(self) -> float | None: ...
    @property
    def state(self) -> Any: ...
    @property
    def pareto(self) -> pd.DataFrame: ...
    def trial_records(self) -> list[TrialRecord]: ...


def require(module: str, extra: str, what: str) -> None:
    """An ImportError naming the pip extra when ``module`` is not installed; checked without importing it (an
    import of mlflow takes seconds, and the export process does it)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ImportError(f"{what} needs {module!r}, which is not installed here: pip install '{extra}'")


# --- the events -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExperimentInfo:
    id: str
    name: str
    kind: str
    metrics: tuple[str, ...]
    modes: tuple[str, ...]
    started: float


@dataclass(frozen=True)
class TrialInfo:
    """A trial as it was when the event was made (the loop's record changes after)."""

    trial_id: int
    params: dict[str, Any]
    labels: dict[str, Any]
    started: float
    state: str = "running"
    value: float | None = None
    duration: float | None = None
    steps: int = 0
    attempts: int = 0
    last: dict[str, float] = field(default_factory=dict)
    logs: str = ""

    @classmethod
    def of(cls, rec: TrialRecord, ended: bool = False) -> TrialInfo:
        if not ended:
            return cls(rec.trial_id, _plain_dict(rec.params), _plain_dict(rec.labels), rec.started)
        return cls(
            rec.trial_id,
            _plain_dict(rec.params),
            _plain_dict(rec.labels),
            rec.started,
            state=rec.state.value,
            value=rec.value,
            duration=rec.duration,
            steps=rec.steps,
            attempts=rec.attempts,
            last=dict(rec.last),
            logs=rec.logs,
        )

    @property
    def ended(self) -> float:
        return self.started + (self.duration or 0.0)


@dataclass(frozen=True)
class ExperimentStarted:
    experiment: ExperimentInfo


@dataclass(frozen=True)
class TrialStarted:
    trial: TrialInfo


@dataclass(frozen=True)
class Reported:
    """Reports of a trial as they arrived together: ``rows``, each ``(step, metrics, sent_at)``."""

    trial_id: int
    rows: Sequence[Sequence[Any]]


@dataclass(frozen=True)
class TrialEnded:
    trial: TrialInfo


@dataclass(frozen=True)
class ExperimentEnded:
    state: str
    ended: float
    best: tuple[int, float] | None  # the best trial's id and value; None: none (or several objectives)
    pareto: tuple[int, ...] = ()  # several objectives: the trials of the Pareto front


Event = ExperimentStarted | TrialStarted | Reported | TrialEnded | ExperimentEnded


# --- the events as plain lists (msgpack), from the kernel to the export process ----------------------------------
def encode(event: Event) -> list:
    """An event as a list of plain values; a report batch's rows go as they came (already plain: they crossed
    the wire from the worker as msgpack)."""
    if type(event) is Reported:
        return ["R", event.trial_id, event.rows]
    if type(event) is TrialStarted or type(event) is TrialEnded:
        t = event.trial
        fields = [
            t.trial_id,
            t.params,
            t.labels,
            t.started,
            t.state,
            t.value,
            t.duration,
            t.steps,
            t.attempts,
        ]
        return ["T" if type(event) is TrialStarted else "E", *fields, t.last, t.logs]
    if type(event) is ExperimentStarted:
        e = event.experiment
        return ["S", e.id, e.name, e.kind, list(e.metrics), list(e.modes), e.started]
    assert type(event) is ExperimentEnded  # the last kind of event
    return ["X", event.state, event.ended, event.best and list(event.best), list(event.pareto)]


def decode(item: list) -> Event:
    code = item[0]
    if code == "R":
        return Reported(item[1], item[2])
    if code in ("T", "E"):
        trial = TrialInfo(*item[1:10], last=item[10], logs=item[11])  # type: ignore[misc]  # its first 9 fields
        return TrialStarted(trial) if code == "T" else TrialEnded(trial)
    if code == "S":
        _, id_, name, kind, metrics, modes, started = item
        return ExperimentStarted(ExperimentInfo(id_, name, kind, tuple(metrics), tuple(modes), started))
    _, state, ended, best, pareto = item
    return ExperimentEnded(state, ended, best and (best[0], best[1]), tuple(pareto))


def _plain(value: Any) -> Any:
    """A parameter's value as msgpack carries it and the trackers show it: numbers (numpy's too) and strings as
    they are, anything else as its text (what MLflow's params and the hparams table show of it anyway)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) < 2**63:
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return str(value)


def _plain_dict(values: dict[str, Any]) -> dict[str, Any]:
    return {str(k): _plain(v) for k, v in values.items()}


def experiment_info(exp: Tracked) -> ExperimentInfo:
    objective = exp.record.definition.objective
    pairs = [(m, str(d)) for m, d in zip(objective.metrics, objective.directions, strict=True) if m]
    return ExperimentInfo(
        id=exp.id,
        name=exp.name,
        kind=str(exp.kind),
        metrics=tuple(m for m, _ in pairs),
        modes=tuple(d for _, d in pairs),
        started=exp.started,
    )


def experiment_ended(exp: Tracked) -> ExperimentEnded:
    objective = exp.record.definition.objective
    pareto: tuple[int, ...] = ()
    best = None
    if objective.several:
        pareto = tuple(int(t) for t in exp.pareto["trial_id"])
    else:
        rec = exp.record.best()
        if rec is not None and rec.value is not None:
            best = (rec.trial_id, rec.value)
    return ExperimentEnded(str(exp.state), exp.ended or time.time(), best, pareto)


def events_of(exp: Tracked) -> Iterator[Event]:
    """A finished (or stored) experiment told as the events a live run makes: every trial's start, its reports at
    their steps and times, its end; the experiment's end if it has ended."""
    exp.record.load_details()  # a stored experiment reads its reports and output only when asked
    yield ExperimentStarted(experiment_info(exp))
    records = exp.trial_records()
    for rec in records:
        yield TrialStarted(TrialInfo.of(rec))
    for trial_id, _attempt, step, metric, value, at in exp.record.report_rows():
        yield Reported(trial_id, [(step, {metric: value}, at)])
    for rec in records:
        if rec.state.finished:
            yield TrialEnded(TrialInfo.of(rec, ended=True))
    if exp.ended is not None:
        yield experiment_ended(exp)


# --- where they go ----------------------------------------------------------------------------------------------
class Destination(ABC):
    """A tracker's writer: made and used on one thread only (the exporter's, or the caller's for ``to_*``)."""

    @abstractmethod
    def write(self, events: Sequence[Event]) -> None:
        """Write these events, in order; raise on failure."""

    def close(self) -> None:  # noqa: B027 - only a writer with files open has work to do
        """Release what it holds (files)."""


def export(destination: Destination, events: Iterator[Event], batch: int = 10_000) -> None:
    """Write ``events`` in batches on this thread (``exp.to_mlflow()``): a failure raises."""
    try:
        chunk: list[Event] = []
        for event in events:
            chunk.append(event)
            if len(chunk) >= batch:
                destination.write(chunk)
                chunk = []
        if chunk:
            destination.write(chunk)
    finally:
        destination.close()


def finite(value: Any) -> float | None:
    """A value as a float a tracker can store, or None (NaN and infinities are left out)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
