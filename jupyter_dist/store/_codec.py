"""How definitions and trial records are written to the store as JSON, and reports as msgpack, and read back.

Values that JSON cannot hold (a class in a search space, a tensor passed as a constant) are kept as their repr:
the stored experiment shows what was run even when it cannot rebuild it. NaN and infinities are kept as such
(Python's json writes them as NaN/Infinity and reads them back; msgpack keeps every float64 bit for bit).
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from typing import Any

import msgpack

from ..protocol import Direction, ErrorKind, Objective, TrialState
from ..space import Choice, Integer, Space, Uniform
from ._base import ExperimentDefinition, TrialRecord

# One encoder for every call: json.dumps() with options builds a new encoder each time, a third of the cost of
# writing a small report's metrics (measured with py-spy on 300k reports).
_ENCODER = json.JSONEncoder(default=repr, separators=(",", ":"))


def dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def pack_reports(batches: list) -> bytes | str:
    """Report batches, ``[(trial_id, attempt number, [[step, metrics, sent_at], ...]), ...]``, as one value for
    the store: msgpack bytes. Encoding a whole list in one call costs ~0.2 us per report against ~2 us for one
    JSON text per report (float repr dominates JSON's cost), and takes half the bytes (measured on 200k reports).
    Whatever msgpack cannot hold (an int past 64 bits, a string that is not UTF-8) makes the whole list JSON text
    instead, so that no report is lost; ``unpack_reports`` reads both."""
    try:
        return msgpack.packb(batches, default=_beyond_msgpack)
    except (OverflowError, ValueError):
        return dumps(batches)


def _beyond_msgpack(value: Any) -> str:
    if isinstance(value, int):  # msgpack hands over an int past 64 bits: JSON keeps it exactly
        raise OverflowError(value)
    return repr(value)  # as the JSON encoder's default does


def unpack_reports(stored: bytes | str) -> list:
    """What ``pack_reports`` stored, as lists: ``[[trial_id, attempt, [[step, metrics, sent_at], ...]], ...]``."""
    return msgpack.unpackb(stored) if isinstance(stored, bytes) else json.loads(stored)


def plain(value: Any) -> Any:
    """``value`` if JSON holds it as it is, else its repr."""
    # What nearly every parameter is: returned as it is, without a round trip through JSON text (the REST API
    # summarises every trial of an experiment per request).
    if value is None or type(value) in (str, int, float, bool):
        return value
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


def space_to_json(space: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in space.items():
        if isinstance(value, Uniform):
            out[name] = {"uniform": [value.lo, value.hi], "log": value.log}
            if value.step is not None:
                out[name]["step"] = value.step
        elif isinstance(value, Integer):
            # step and log only when set: a space stored before they existed reads the same
            out[name] = {"integer": [value.lo, value.hi]}
            if value.step != 1:
                out[name]["step"] = value.step
            if value.log:
                out[name]["log"] = True
        elif isinstance(value, Choice):
            out[name] = {"choice": [plain(o) for o in value.options]}
        elif isinstance(value, Space):
            out[name] = {"repr": repr(value)}
        else:
            out[name] = {"value": plain(value)}
    return out


def space_from_json(stored: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in stored.items():
        if "uniform" in spec:
            lo, hi = spec["uniform"]
            out[name] = Uniform(lo, hi, log=spec.get("log", False), step=spec.get("step"))
        elif "integer" in spec:
            lo, hi = spec["integer"]
            out[name] = Integer(lo, hi, step=spec.get("step", 1), log=spec.get("log", False))
        elif "choice" in spec:
            out[name] = Choice(tuple(spec["choice"]))
        else:
            out[name] = spec.get("value", spec.get("repr"))
    return out


def definition_to_json(definition: ExperimentDefinition) -> str:
    return dumps(
        {
            "kind": definition.kind,
            "name": definition.name,
            "metric": definition.objective.metric,
            "mode": definition.objective.direction.value,
            "scope": definition.objective.scope,
            **_objectives(definition.objective),
            "space": space_to_json(definition.space),
            "total": definition.total,
            "max_steps": definition.max_steps,
            "timeout": definition.timeout,
            "dashboard_link": definition.dashboard_link,
            "id": definition.id,
            "created": definition.created,
            "details": plain(definition.details),
        }
    )


def _objectives(objective: Objective) -> dict[str, list[list[str | None]]]:
    """A multi-objective search's every objective, [metric, mode] each (metric and mode say its first); {}."""
    if not objective.several:
        return {}
    pairs = zip(objective.metrics, objective.directions, strict=True)
    return {"objectives": [[metric, direction.value] for metric, direction in pairs]}


def definition_from_json(text: str) -> ExperimentDefinition:
    d = json.loads(text)
    return ExperimentDefinition(
        d["kind"],
        d["name"],
        # stores written before objective_scope= have no scope: theirs was "last"
        Objective(
            d["metric"],
            Direction(d["mode"]),
            d.get("scope", "last"),
            tuple((m, Direction(mode)) for m, mode in d.get("objectives", [])[1:]),
        ),
        space_from_json(d["space"]),
        total=d["total"],
        max_steps=d["max_steps"],
        timeout=d["timeout"],
        dashboard_link=d["dashboard_link"],
        id=d["id"],
        created=d["created"],
        details=d.get("details") or {},
    )


# What a trial's JSON holds: its TrialRecord's fields, less what is stored elsewhere (output in ``logs``, the
# learning curve in ``reports``, a data-parallel trial's return values pickled in ``trials.result``). ``queued``
# is kept so the REST API shows a waiting trial as queued; one read back from a run that is gone is interrupted.
_ELSEWHERE = {"stdout", "stderr", "curve_steps", "curve_values", "result", "rank_results"}
_TRIAL_FIELDS = [f.name for f in fields(TrialRecord) if f.name not in _ELSEWHERE]
_KNOWN_FIELDS = frozenset(_TRIAL_FIELDS)  # load() asks of every key of every trial: a set, not a list of 27


def trial_to_json(rec: TrialRecord) -> str:
    return fields_to_json(trial_fields(rec))


def trial_fields(rec: TrialRecord) -> dict[str, Any]:
    """What ``trial_to_json`` writes of ``rec``, as it is now, for another thread to encode later: the dicts a
    running trial's record goes on changing are copied (~2 us, against ~10 us to encode it)."""
    d = {name: getattr(rec, name) for name in _TRIAL_FIELDS}
    d["params"], d["labels"], d["last"] = dict(rec.params), dict(rec.labels), dict(rec.last)
    return d


def fields_to_json(d: dict[str, Any]) -> str:
    """A ``trial_fields`` snapshot (which it takes over) as the trial's JSON, less the fields that hold their
    default (nothing, none, false): a plain search's trial is half as long, and ``load()`` of 100,000 trials
    parses it in half the time. A reader takes a field that is not there as its default."""
    d["params"] = {k: plain(v) for k, v in d["params"].items()}
    d["labels"] = {k: plain(v) for k, v in d["labels"].items()}
    return dumps({k: v for k, v in d.items() if k in _ALWAYS or not _default(v)})


_ALWAYS = frozenset({"trial_id", "params", "state", "started"})


def _default(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (list, dict)) and not value)


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None, recursively: browsers' JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def trial_from_json(text: str) -> TrialRecord:
    return trial_from_fields(json.loads(text))


def trial_from_fields(d: dict[str, Any]) -> TrialRecord:
    """A trial's stored JSON, parsed, as a ``TrialRecord`` (a field it lacks: its default)."""
    rec = TrialRecord(**{k: v for k, v in d.items() if k in _KNOWN_FIELDS})
    rec.state = TrialState(rec.state)
    rec.error_kind = ErrorKind(rec.error_kind) if rec.error_kind else None
    return rec
