"""The trial protocol: the vocabulary every layer shares, and the messages between workers and the kernel.

- ``ExperimentKind``, ``TrialState``, ``ExperimentState``, ``Direction``, ``ErrorKind``: named states instead of
  bare strings. They are ``str`` enums, so ``exp.state == "completed"`` and the DataFrames' plain strings keep
  working, and the store keeps their plain values.
- ``Objective``: the one place that knows which metric counts, which way is better and over which of a trial's
  reports (its ``scope``: ``ScopedValue``); it picks the values the pruner judges and each trial's final value,
  and says, in one message, when the metric is missing.
- ``Outcome``: how one trial attempt (or one rank of it) ended, built on the worker, decoded in the kernel.
- ``TrialTask``: what one trial task is told (kernel → worker): the function, the parameters, where to report,
  its rank, its GPUs and checkpoints; ``CheckpointPlan``: where a trial's checkpoints go and how many are kept.
- The wire: reports, output, checkpoints saved or resumed from, and outcomes travel as Dask events. The messages
  (plain dicts with short keys, made by ``encode_*``) sent at the same moment travel together in one event, packed
  by ``pack_event`` as msgpack bytes (worker side); ``decode_all`` is its only reader (kernel side).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, TypedDict

import msgpack

from .errors import ArgumentError, JupyterDistError

__all__ = [
    "CheckpointEvent",
    "CheckpointPlan",
    "Direction",
    "ErrorKind",
    "ExperimentKind",
    "ExperimentState",
    "LogLine",
    "Objective",
    "Outcome",
    "RankInfo",
    "ReportBatch",
    "SCOPES",
    "ScopedValue",
    "ReportRow",
    "TrialState",
    "TrialTask",
    "check_scope",
    "decode",
    "decode_all",
    "encode_checkpoint",
    "encode_log",
    "encode_outcome",
    "encode_reports",
    "pack_event",
]


class _StrEnum(str, Enum):
    def __str__(self) -> str:  # f-strings and str() give the plain value, as enum.StrEnum (3.11+) does
        return self.value


class ExperimentKind(_StrEnum):
    """What an experiment runs; each kind is one entry of the registry in jupyter_dist/kinds/. The store keeps
    these values, so a stored experiment loads back as its kind."""

    HPO = "hpo"
    ABLATION = "ablation"
    DDP = "ddp"
    PBT = "pbt"


class TrialState(_StrEnum):
    """A trial's state, as ``exp.trials`` and the store say it: running, then completed, pruned (stopped early
    by the pruner), failed, stopped (with the experiment: Stop button, interrupt, timeout) or interrupted
    (running when its kernel went away, found so in the store)."""

    RUNNING = "running"
    COMPLETED = "completed"
    PRUNED = "pruned"  # stopped early by the pruner
    FAILED = "failed"
    STOPPED = "stopped"  # stopped with the experiment (Stop button, interrupt, timeout)
    INTERRUPTED = "interrupted"  # running when its kernel went away (found so in the store)

    @property
    def finished(self) -> bool:
        """No longer running."""
        return self is not TrialState.RUNNING

    @property
    def done(self) -> bool:
        """Counts towards the experiment's total (it ran to its end, or was pruned or stopped). An interrupted
        trial is not done: a resumed run runs it again."""
        return self not in (TrialState.RUNNING, TrialState.INTERRUPTED)


class ExperimentState(_StrEnum):
    """An experiment's state (``exp.state``): running, then completed, stopped, failed, or interrupted (found
    in the store still running with its kernel gone)."""

    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    # Found in the store still "running" with its kernel gone (killed, crashed, the machine restarted).
    INTERRUPTED = "interrupted"


class Direction(_StrEnum):
    """Which way the objective is better: ``mode="max"`` or ``mode="min"``."""

    MAX = "max"
    MIN = "min"

    @classmethod
    def parse(cls, mode: Any) -> Direction:
        """The Direction of a ``mode=`` argument; an ArgumentError for anything but "max" or "min"."""
        try:
            return cls(mode)
        except ValueError:
            raise ArgumentError(f"mode={mode!r}: use 'max' or 'min'") from None

    @property
    def optuna(self) -> str:
        """As Optuna names it, ``"maximize"`` or ``"minimize"``."""
        return "maximize" if self is Direction.MAX else "minimize"

    def better(self, a: float, b: float) -> bool:
        """Whether ``a`` is better than ``b`` this way."""
        return a > b if self is Direction.MAX else a < b


class ErrorKind(_StrEnum):
    """Why a trial failed, so code decides on a kind rather than by searching the traceback's text."""

    TRIAL = "trial"  # the training function raised
    SETUP = "setup"  # a jupyter_dist error inside the trial: the experiment as set up cannot run (every trial would)
    RESULT = "result"  # it returned something that is not a number, a dict of metrics or None
    METRIC = "metric"  # the objective's metric was neither reported nor returned, or is NaN
    LOST = "lost"  # its task was lost: the worker died, Dask gave up on it
    ABANDONED = "abandoned"  # it did not stop when told to, or the run was interrupted


@dataclass
class Outcome:
    """How one trial attempt ended (for a data-parallel trial: one rank's, then the merged one)."""

    trial_id: int
    attempt: str | None
    state: TrialState
    returned: float | dict[str, float] | None = None
    last: dict[str, float] = field(default_factory=dict)  # the last reported value of each metric
    steps: int | None = None
    started: float | None = None
    duration: float | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    worker: str | None = None
    stopped_at: float | None = None  # when report() raised TrialPruned: the stop latency's far end
    failed_at: float | None = None  # when the function raised, before any clean-up: which rank failed first
    rank: int = 0
    worker_lost: bool = False
    value: float | None = None  # the objective's value, decided in the kernel by Objective.judge
    result: Any = None  # a data-parallel rank's whole return value (task result only, never on the wire)
    rank_results: list | None = None  # every rank's, in rank order, once merged
    constraints: list[float] | None = None  # hpo(constraints=): evaluated in the kernel as it completed
    # An elastic data-parallel rank that ended at a checkpoint because the kernel asked the job to regroup (more
    # workers came): the job goes on from that checkpoint at its new size (trials/_elastic.py).
    regroup: bool = False

    @classmethod
    def lost(
        cls, trial_id: int, state: TrialState, error: str | None, kind: ErrorKind | None, rank: int = 0
    ) -> Outcome:
        """The outcome of a trial whose task never gave one (worker lost, cancelled, abandoned)."""
        return cls(trial_id, None, state, error=error, error_kind=kind if error else None, rank=rank)

    def to_wire(self) -> dict:
        wire = {name: getattr(self, name) for name in _WIRE_NAMES}
        wire["state"] = self.state.value
        wire["error_kind"] = self.error_kind.value if self.error_kind else None
        return wire

    @classmethod
    def from_wire(cls, wire: dict) -> Outcome:
        kind = wire.get("error_kind")
        known = {k: v for k, v in wire.items() if k in _WIRE_FIELDS}
        return cls(
            **dict(known, state=TrialState(wire["state"]), error_kind=ErrorKind(kind) if kind else None)
        )


_LOCAL_ONLY = ("result", "rank_results", "value", "constraints")
# In field order, once: dataclasses.fields() at every outcome cost a brief trial ~30 us on its worker.
_WIRE_NAMES = tuple(f.name for f in dataclasses.fields(Outcome) if f.name not in _LOCAL_ONLY)
_WIRE_FIELDS = set(_WIRE_NAMES)


# What a trial's value is, over its current attempt's reports of the objective (Ray Tune's ``scope``); a returned
# value counts as the attempt's final report.
SCOPES = ("last", "max", "min", "avg", "last-5-avg", "last-10-avg")


class ScopedValue:
    """A trial attempt's value under a scope, kept up to date one report at a time (O(1) each: a pruner asks it
    at every step, and a trial may report thousands of them)."""

    def __init__(self, scope: str = "last") -> None:
        self.scope = scope
        self.count = 0
        self.value: float | None = None  # the scope over the values added so far
        self._total = 0.0
        # The last k values, for "last-k-avg": a ring, so each report costs the same however long the curve.
        self._window = int(scope.split("-")[1]) if scope.startswith("last-") else 0
        self._recent: list[float] = []

    def add(self, value: float) -> float:
        """One more report of the objective; the scope over every report so far."""
        scope, self.count = self.scope, self.count + 1
        if scope == "last" or self.value is None:
            self.value = value
        elif scope == "max":
            self.value = max(self.value, value)
        elif scope == "min":
            self.value = min(self.value, value)
        if scope == "avg":
            self._total += value
            self.value = self._total / self.count
        elif self._window:
            if len(self._recent) == self._window:
                oldest = (self.count - 1) % self._window
                self._total -= self._recent[oldest]
                self._recent[oldest] = value
            else:
                self._recent.append(value)
            self._total += value
            self.value = self._total / len(self._recent)
        return self.value

    def copy(self) -> ScopedValue:
        copy = ScopedValue(self.scope)
        copy.__dict__.update(self.__dict__, _recent=list(self._recent))
        return copy


def check_scope(scope: Any) -> str:
    if scope not in SCOPES:
        raise ArgumentError(f"objective_scope={scope!r}: use one of {', '.join(map(repr, SCOPES))}")
    return scope


@dataclass(frozen=True)
class Objective:
    """The metric an experiment optimises and which way; ``metric=None``: nothing to optimise (data-parallel).
    ``scope``: which of a trial's reports make its value (``SCOPES``): the last one (the returned value, else the
    last report), or the max, min, mean, or mean of the last 5 or 10, of its current attempt's reports.

    ``others``: the objectives beyond the first of a multi-objective search, (metric, direction) each. A trial's
    value is still its first objective's; its value of each other one (the returned value, else its last report)
    is put in its ``last`` metrics as it is judged, so ``values(value, last)`` gives the whole vector."""

    metric: str | None
    direction: Direction = Direction.MAX
    scope: str = "last"
    others: tuple[tuple[str, Direction], ...] = ()

    @classmethod
    def of(cls, metric: Any, mode: Any, scope: str = "last") -> Objective:
        """The objective of ``metric=``/``mode=`` as the API takes them: a name and "max"/"min", or (several
        objectives) lists of names and of modes, one each; an ArgumentError naming what does not fit."""
        if not isinstance(metric, (list, tuple)):
            return cls(metric, Direction.parse(mode), scope)
        names = list(metric)
        if len(names) < 2 or not all(isinstance(n, str) and n for n in names):
            raise ArgumentError(f"metric={metric!r}: give a metric's name, or a list of two or more names")
        if len(set(names)) < len(names):
            raise ArgumentError(f"metric={metric!r}: each objective once")
        if not isinstance(mode, (list, tuple)) or len(mode) != len(names):
            raise ArgumentError(
                f"metric={metric!r} has {len(names)} objectives: give one mode each, e.g. "
                f"mode={['max'] + ['min'] * (len(names) - 1)!r} (not mode={mode!r})"
            )
        if scope != "last":
            raise ArgumentError(
                f"objective_scope={scope!r}: several objectives are each valued by the trial's returned or last "
                "reported value (scope 'last')"
            )
        directions = [Direction.parse(m) for m in mode]
        return cls(names[0], directions[0], scope, tuple(zip(names[1:], directions[1:], strict=True)))

    @property
    def several(self) -> bool:
        """A multi-objective search."""
        return bool(self.others)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.metric, *(name for name, _ in self.others))

    @property
    def directions(self) -> tuple[Direction, ...]:
        return (self.direction, *(direction for _, direction in self.others))

    def values(self, value: float | None, last: dict[str, float]) -> list[float] | None:
        """A judged trial's value of every objective, in order; None when one is missing."""
        vector = [value, *(last.get(name) for name, _ in self.others)]
        return None if any(v is None for v in vector) else [float(v) for v in vector]

    def better(self, a: float, b: float) -> bool:
        return self.direction.better(a, b)

    def reaches(self, value: float, target: float) -> bool:
        """Whether ``value`` is at ``target`` or beyond it, the better way."""
        return value >= target if self.direction is Direction.MAX else value <= target

    def intermediate(self, metrics: dict[str, float]) -> float | None:
        """The value a pruner judges at one reported step (None: the step did not report the metric)."""
        return metrics.get(self.metric) if self.metric else None

    def tracker(self) -> ScopedValue:
        return ScopedValue(self.scope)

    def scoped(self, values: list[float]) -> list[float]:
        """A curve of the objective's reports, in the order they were made, as the scope sees it: its value
        after each report (what a pruner is given at that step; the last is the trial's value)."""
        tracker = self.tracker()
        return [tracker.add(value) for value in values]

    def judge(self, outcome: Outcome, reports: ScopedValue | None = None) -> Outcome:
        """Set ``outcome.value``: a completed trial's objective, or a pruned/stopped one's last value (as Optuna
        keeps it), under the scope. ``reports``: the attempt's reports of the metric so far, for a scope other
        than "last". A completed trial without a usable value becomes failed, with ``ErrorKind.METRIC``."""
        if self.metric is None or outcome.state is TrialState.FAILED:
            return outcome
        returned = outcome.returned
        if isinstance(returned, float):
            final = returned
        elif isinstance(returned, dict) and self.metric in returned:
            final = returned[self.metric]
        else:
            final = None
        scoped = self.scope != "last" and reports is not None and reports.count
        if outcome.state is not TrialState.COMPLETED:
            value = reports.value if scoped else outcome.last.get(self.metric)
            return dataclasses.replace(outcome, value=value)
        if scoped:
            # a returned value counts as the attempt's final report (on a copy: a pruner may ask again)
            value = reports.value if final is None else reports.copy().add(final)
        elif final is not None:
            value = final
        elif self.metric in outcome.last:
            value = outcome.last[self.metric]
        else:
            seen = sorted(set(outcome.last) | set(returned or {}))
            close = difflib.get_close_matches(self.metric, seen, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return self._failed(
                outcome,
                f"the training function neither returned nor reported metric {self.metric!r} "
                f"(it reported/returned: {', '.join(seen) or 'nothing'}); {hint}report it with "
                f"jupyter_dist.report({self.metric}=...) or return it, or pick another metric",
            )
        if math.isnan(value):
            return self._failed(outcome, f"the objective {self.metric!r} is NaN")
        if self.others:
            return self._judge_others(dataclasses.replace(outcome, value=value))
        return dataclasses.replace(outcome, value=value)

    def _judge_others(self, outcome: Outcome) -> Outcome:
        """A completed trial's value of each objective beyond the first, into its ``last`` metrics."""
        returned = outcome.returned if isinstance(outcome.returned, dict) else {}
        last = dict(outcome.last)
        for name, _ in self.others:
            value = returned.get(name, last.get(name))
            if value is None:
                seen = ", ".join(sorted(set(last) | set(returned))) or "nothing"
                return self._failed(
                    outcome,
                    f"the training function neither returned nor reported objective {name!r} (it "
                    f"reported/returned: {seen}); report it with jupyter_dist.report({name}=...) or return it",
                )
            if math.isnan(value):
                return self._failed(outcome, f"the objective {name!r} is NaN")
            last[name] = float(value)
        return dataclasses.replace(outcome, last=last)

    @staticmethod
    def _failed(outcome: Outcome, problem: str) -> Outcome:
        return dataclasses.replace(
            outcome, state=TrialState.FAILED, error=problem, error_kind=ErrorKind.METRIC, value=None
        )


# --- the wire --------------------------------------------------------------------------------------------
# A report row: [step, {metric: value}, sent_at]. Lists, not tuples or objects: msgpack, and cheap in bulk.
ReportRow = list


class WireReports(TypedDict):
    k: Literal["r"]
    t: int  # trial id
    a: str  # attempt id
    b: list[ReportRow]


class WireLog(TypedDict):
    k: Literal["l"]
    t: int
    a: str
    n: str  # "stdout" or "stderr"
    x: str


class WireCheckpoint(TypedDict):
    k: Literal["c"]
    t: int
    a: str
    s: int  # the step saved, or resumed from
    p: str  # the checkpoint's folder
    r: bool  # True: the attempt resumed from it; False: it was saved


class WireOutcome(TypedDict):
    k: Literal["f"]
    t: int
    a: str
    o: dict  # Outcome.to_wire()


@dataclass(frozen=True)
class ReportBatch:
    trial_id: int
    attempt: str
    rows: list[ReportRow]


@dataclass(frozen=True)
class LogLine:
    trial_id: int
    attempt: str
    stream: str
    text: str


@dataclass(frozen=True)
class CheckpointEvent:
    """A trial attempt saved a checkpoint at ``step``, or (``resumed``) started again from it."""

    trial_id: int
    attempt: str
    step: int
    path: str
    resumed: bool


def encode_reports(trial_id: int, attempt: str, rows: list[ReportRow]) -> WireReports:
    return {"k": "r", "t": trial_id, "a": attempt, "b": rows}


def encode_log(trial_id: int, attempt: str, stream: str, text: str) -> WireLog:
    return {"k": "l", "t": trial_id, "a": attempt, "n": stream, "x": text}


def encode_checkpoint(trial_id: int, attempt: str, step: int, path: str, resumed: bool) -> WireCheckpoint:
    return {"k": "c", "t": trial_id, "a": attempt, "s": step, "p": path, "r": resumed}


def encode_outcome(outcome: Outcome) -> WireOutcome:
    return {"k": "f", "t": outcome.trial_id, "a": outcome.attempt or "", "o": outcome.to_wire()}


def pack_event(messages: list[dict]) -> bytes:
    """The messages sent at one moment, as one event's payload: msgpack bytes rather than the messages' own
    containers. Each Dask event costs about a millisecond of CPU in the worker and one in the scheduler and client
    (bench_trial_speed), so messages travel together; and the scheduler keeps each topic's last 1,000 events
    (``distributed.admin.low-level-log-length``). Kept as containers, 1,000 events of 100 reports were ~200,000
    objects in the scheduler's process (the kernel, with the embedded cluster), each living long enough to reach
    the oldest generation of the garbage collector: a 200-260 ms full collection mid-run, every thread paused
    (10,000 trials x 100 reports). Bytes are one object the collector never scans."""
    return msgpack.packb(messages, use_bin_type=True, default=_plain_number)


def _plain_number(value: Any) -> Any:
    # report() and Outcome keep metrics as floats; a numpy or torch number that slipped through still travels.
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(
        f"a value of type {type(value).__name__} cannot travel in a jupyter_dist event: {value!r:.80}"
    )


def decode_all(payload: bytes) -> list[ReportBatch | LogLine | CheckpointEvent | Outcome]:
    """The messages of one event (``pack_event``), in the order they were sent."""
    return [decode(m) for m in msgpack.unpackb(payload, use_list=False, strict_map_key=False)]


def decode(msg: dict) -> ReportBatch | LogLine | CheckpointEvent | Outcome:
    kind = msg["k"]
    if kind == "r":
        return ReportBatch(msg["t"], msg["a"], msg["b"])
    if kind == "l":
        return LogLine(msg["t"], msg["a"], msg["n"], msg["x"])
    if kind == "c":
        return CheckpointEvent(msg["t"], msg["a"], msg["s"], msg["p"], msg["r"])
    if kind == "f":
        return Outcome.from_wire(msg["o"])
    raise JupyterDistError(f"unknown message kind {kind!r}")


@dataclass
class Regrouped:
    """An elastic data-parallel job (trials/_elastic.py) started again at another size, as the kernel records it: when, why (the ranks
    lost and their workers, or workers free to grow onto), the world size before and after, and the checkpoint it goes on from."""

    trial_id: int
    why: str
    lost: list[int]
    world_before: int
    world_after: int
    from_step: int
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class RankInfo:
    """What one rank of a data-parallel trial is told: its place in the job and where the job meets."""

    rank: int
    world: int
    host: str  # rank 0's host: the rendezvous
    port: int
    attempt: str  # one attempt id for all ranks: their output belongs to one run of the trial


@dataclass(frozen=True)
class CheckpointPlan:
    """Where an experiment's trials keep their checkpoints: ``directory`` (a local path or an fsspec URL every
    worker can reach) holds ``trial-<n>/step-<step>/``; the newest ``keep`` of each trial's are kept."""

    directory: str
    keep: int

    def trial_directory(self, trial_id: int) -> str:
        return f"{self.directory.rstrip('/')}/trial-{trial_id}"


@dataclass(frozen=True)
class TrialTask:
    """What one trial task runs (one attempt of a trial, or one rank of it), as the kernel sends it to a worker."""

    function: tuple[str, str]  # how workers keep the function, unpickled: (experiment id, hash of its pickle)
    # The function, pickled once per run: cheap to send with every task; above jupyter_dist.scatter-threshold the
    # key those bytes were scattered under, which each worker fetches once (trials/_by_reference.py).
    pickled: bytes | str
    exp_id: str
    trial_id: int
    params: dict[str, Any]
    topic: str  # the Dask event topic its reports, output and outcome go to
    rank: RankInfo | None  # one rank of a data-parallel trial; None: a single-task trial
    gpus: float  # how many of the worker's declared GPUs it holds while it runs (jupyter_dist.devices())
    # Where its jupyter_dist.checkpoint() saves (keep_checkpoints of them); None: nowhere.
    checkpoint_dir: str | None
    keep_checkpoints: int | None
    report_wait: float  # how long a report may wait for others to travel with (trials/_trial_context.py)
    cpus: int | None = None  # torch's intra-op threads while it runs (cpus_per_trial=); None: the worker's
    # A population-based-training member's segment: it ends (completed) once it has checkpointed this step or a
    # later one, and the population decides where the member goes on from (search/_population.py).
    until_step: int | None = None
    # One rank of an elastic data-parallel job: at each checkpoint its ranks agree whether to end there and regroup
    # at another size (trials/_elastic.py).
    elastic: bool = False
