"""The wire: reports, output, checkpoints saved or resumed from, utilisation samples and outcomes travel as Dask
events. The messages (plain dicts with short keys, made by ``encode_*``) sent at the same moment travel together in
one event, packed by ``pack_event`` as msgpack bytes (worker side); ``decode_all`` is its only reader (kernel
side)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import msgpack

from ..errors import JupyterDistError
from ._messages import Outcome

__all__ = [
    "CheckpointEvent",
    "LogLine",
    "ReportBatch",
    "ReportRow",
    "UtilizationSample",
    "decode",
    "decode_all",
    "encode_checkpoint",
    "encode_log",
    "encode_outcome",
    "encode_reports",
    "encode_utilization",
    "pack_event",
]

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


class WireUtilization(TypedDict):
    k: Literal["u"]
    t: int
    a: str
    s: list  # [time, cpu_percent, rss_mb, gpu_util, gpu_mem_mb]; the GPU's None where NVML sees none


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


@dataclass(frozen=True)
class UtilizationSample:
    """What one trial attempt used over about the last second, sampled on its worker (trials/_utilization.py):
    CPU in percent of one core, the process's resident memory, and its GPUs' utilisation and this process's memory
    on them (None where NVML sees no device)."""

    trial_id: int
    attempt: str
    time: float
    cpu_percent: float
    rss_mb: float
    gpu_util: float | None
    gpu_mem_mb: float | None


def encode_reports(trial_id: int, attempt: str, rows: list[ReportRow]) -> WireReports:
    return {"k": "r", "t": trial_id, "a": attempt, "b": rows}


def encode_log(trial_id: int, attempt: str, stream: str, text: str) -> WireLog:
    return {"k": "l", "t": trial_id, "a": attempt, "n": stream, "x": text}


def encode_checkpoint(trial_id: int, attempt: str, step: int, path: str, resumed: bool) -> WireCheckpoint:
    return {"k": "c", "t": trial_id, "a": attempt, "s": step, "p": path, "r": resumed}


def encode_utilization(
    trial_id: int,
    attempt: str,
    at: float,
    cpu_percent: float,
    rss_mb: float,
    gpu_util: float | None,
    gpu_mem_mb: float | None,
) -> WireUtilization:
    return {"k": "u", "t": trial_id, "a": attempt, "s": [at, cpu_percent, rss_mb, gpu_util, gpu_mem_mb]}


def encode_outcome(outcome: Outcome) -> WireOutcome:
    return {"k": "f", "t": outcome.trial_id, "a": outcome.attempt or "", "o": outcome.to_wire()}


def pack_event(messages: Sequence[Mapping[str, Any]]) -> bytes:
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


Message = ReportBatch | LogLine | CheckpointEvent | UtilizationSample | Outcome


def decode_all(payload: bytes) -> list[Message]:
    """The messages of one event (``pack_event``), in the order they were sent."""
    return [decode(m) for m in msgpack.unpackb(payload, use_list=False, strict_map_key=False)]


def decode(msg: dict) -> Message:
    kind = msg["k"]
    if kind == "r":
        return ReportBatch(msg["t"], msg["a"], msg["b"])
    if kind == "l":
        return LogLine(msg["t"], msg["a"], msg["n"], msg["x"])
    if kind == "c":
        return CheckpointEvent(msg["t"], msg["a"], msg["s"], msg["p"], msg["r"])
    if kind == "u":
        return UtilizationSample(msg["t"], msg["a"], *msg["s"])
    if kind == "f":
        return Outcome.from_wire(msg["o"])
    raise JupyterDistError(f"unknown message kind {kind!r}")
