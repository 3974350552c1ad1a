"""What the experiment trackers (MLflow, TensorBoard) share: a run told as a sequence of events, a background
thread that writes them in batches, and the same events made from a finished or stored experiment.

The callbacks' hooks run on the trial loop's thread, where a slow tracking server would delay the next trial and
the pruner. So a hook only copies what it needs of the trial (the loop goes on changing the record) and appends
it to a deque; the exporter's thread takes whatever has gathered every ``INTERVAL`` seconds and writes it as one
batch. The first write that fails stops the export of that run (jupyter_dist's store has everything; the
experiment goes on) and is reported once, as a warning from the next hook or from the experiment's end, which
waits a bounded time for the last writes.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._callbacks import Callback

if TYPE_CHECKING:
    from ..experiment import Experiment
    from ..store import TrialRecord

__all__ = ["Destination", "TrackingCallback", "events_of", "require"]

# How often the exporter's thread writes what has gathered: a batch per second keeps a tracking server's UI close
# to live while a run reporting thousands of times a second makes a handful of requests, not thousands.
INTERVAL = 1.0


def require(module: str, extra: str, what: str) -> None:
    """An ImportError naming the pip extra when ``module`` is not installed; checked without importing it (an
    import of mlflow takes seconds, and the exporter's thread does it)."""
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
            return cls(rec.trial_id, dict(rec.params), dict(rec.labels), rec.started)
        return cls(
            rec.trial_id,
            dict(rec.params),
            dict(rec.labels),
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


def experiment_info(exp: Experiment) -> ExperimentInfo:
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


def experiment_ended(exp: Experiment) -> ExperimentEnded:
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


def events_of(exp: Experiment) -> Iterator[Event]:
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


class Exporter:
    """One live experiment's export: hooks ``put`` events (a deque append), a thread writes them in batches."""

    def __init__(self, make: Callable[[], Destination], where: str, experiment: str) -> None:
        self.where = where  # e.g. "MLflow tracking server http://host:5000": what a warning names
        self.experiment = experiment
        self._make = make
        self._events: deque[Event] = deque()
        self._done = threading.Event()
        self._failure: BaseException | None = None
        self._warned = False
        self._thread = threading.Thread(target=self._run, name=f"jupyter_dist {where}", daemon=True)
        self._thread.start()

    def put(self, event: Event) -> None:
        if self._failure is None:
            self._events.append(event)
        elif not self._warned:
            self._warn(f"failed ({type(self._failure).__name__}: {self._failure})")

    def finish(self, event: Event, timeout: float) -> None:
        """Put the last event and wait, at most ``timeout`` seconds, for everything to be written."""
        self.put(event)
        self._done.set()
        self._thread.join(timeout)
        if self._warned:
            return
        if self._failure is not None:
            self._warn(f"failed ({type(self._failure).__name__}: {self._failure})")
        elif self._thread.is_alive():
            self._warn(f"did not take the last writes within {timeout:g} s (timeout=)")

    def _warn(self, what: str) -> None:
        self._warned = True
        warnings.warn(
            f"jupyter_dist: {self.where} {what}; experiment {self.experiment!r} is not fully sent there. It ran "
            "on and is complete in jupyter_dist's store: load() it and send it again with to_mlflow() / "
            "to_tensorboard()",
            RuntimeWarning,
            stacklevel=4,
        )

    def _run(self) -> None:
        destination = None
        try:
            destination = self._make()
            while True:
                done = self._done.wait(INTERVAL)
                batch = self._take()
                if batch:
                    destination.write(batch)
                if done and not self._events:
                    break
        except Exception as exc:  # the run goes on without this tracker; finish() or the next hook says so
            self._failure = exc
            self._events.clear()
        finally:
            if destination is not None:
                try:
                    destination.close()
                except Exception as exc:
                    self._failure = self._failure or exc

    def _take(self) -> list[Event]:
        batch = []
        while self._events:  # popleft is atomic: a hook may append meanwhile
            batch.append(self._events.popleft())
        return batch


# --- the callbacks' common part -------------------------------------------------------------------------------
class TrackingCallback(Callback):
    """A Callback that sends each experiment it hears of to a tracker, from the kernel, without slowing it.

    One instance may serve several experiments, one after the other or at once: each has its exporter."""

    def __init__(self, timeout: float) -> None:
        if not (isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout >= 0):
            raise ValueError(f"timeout={timeout!r}: give the seconds to wait for the last writes (>= 0)")
        self.timeout = float(timeout)
        self._exporters: dict[str, Exporter] = {}

    @abstractmethod
    def destination(self, experiment: ExperimentInfo) -> Destination:
        """A new writer for this experiment (called on the exporter's thread)."""

    @property
    @abstractmethod
    def where(self) -> str:
        """What a warning calls the tracker."""

    def on_experiment_start(self, exp: Experiment) -> None:
        info = experiment_info(exp)
        exporter = Exporter(lambda: self.destination(info), self.where, exp.name)
        self._exporters[exp.id] = exporter
        exporter.put(ExperimentStarted(info))
        # Reports are heard as the record takes them, a batch at a time with the time each was sent, rather than
        # by on_trial_report: that hook is a call per report on the loop's thread, and overriding it makes the run
        # send every report to the loop (measured: a fifth of a tight report loop's rate, bench_tracking).
        exp.add_report_listener(lambda trial_id, rows: exporter.put(Reported(trial_id, rows)))

    def on_trial_start(self, exp: Experiment, trial: TrialRecord) -> None:
        self._exporters[exp.id].put(TrialStarted(TrialInfo.of(trial)))

    def on_trial_end(self, exp: Experiment, trial: TrialRecord) -> None:
        self._exporters[exp.id].put(TrialEnded(TrialInfo.of(trial, ended=True)))

    def on_experiment_end(self, exp: Experiment) -> None:
        exporter = self._exporters.pop(exp.id, None)
        if exporter is not None:
            exporter.finish(experiment_ended(exp), self.timeout)


def finite(value: Any) -> float | None:
    """A value as a float a tracker can store, or None (NaN and infinities are left out)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
