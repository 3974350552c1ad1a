"""Finished trials as columns: what the kernel keeps of a trial once it has ended, about 150 bytes for the trial of
a plain search instead of the 1.4 KB its ``TrialRecord`` and that record's dicts and lists take.

A ``TrialRecord`` is a Python object of 30 fields, with a dict for its parameters, one for its last metrics and
five lists, most of them empty: fine for the trials that run (a few hundred at most), not for the 100,000 that
ended. Here each field is one column of numbers (``array``) or of references (a list, for values that are not
floats or ints), each parameter and each metric a column of its own, and everything that is usually absent (an
error, labels, output, a checkpoint...) kept only for the trials that have it. A record is made again from a row
when a reader asks for one (``record``); views that poll read the columns instead (``ranking``, ``counts``).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any

from ..protocol import ErrorKind, TrialState
from ._base import TrialRecord
from ._columns import MISSING, Column, fits, numpy_copy

__all__ = ["FinishedTrials"]

_STATES = tuple(TrialState)
_NONE = -(2**63)  # a whole-number column's None
# The fields kept only where they are not their default (None, False or empty): what a trial of a plain search
# does not have.
_SPARSE = (
    "labels",
    "error",
    "error_kind",
    "queued",
    "checkpoint",
    "checkpoint_step",
    "resumed_from",
    "distributions",
    "constraints",
    "restarts",
    "stdout",
    "stderr",
    "prune_decided_at",
    "stopped_at",
    "result",
    "rank_results",
    "result_repr",
)
_SPARSE_NAMES = frozenset(_SPARSE)
# A state's code, by the state or by its value (a stored trial's JSON): a StrEnum member is its value as a key.
_CODE_OF: dict[str, int] = {state.value: code for code, state in enumerate(_STATES)}
_VALUES = frozenset({"result", "rank_results", "constraints"})  # a value, kept whatever it is but None


class FinishedTrials:
    """The ended trials of one experiment (any state but running), one row each, rows in the order they ended.
    Appended to by the record on the trial loop's thread under its lock; read from any thread (rows are only ever
    appended, a row taken out is only marked so)."""

    def __init__(self) -> None:
        self._ids = array("q")
        self._row_of = array("q")  # trial id -> row, -1 for none: trial ids are small and dense
        self._alive = bytearray()
        self._state = bytearray()
        self._value = Column()
        self._started = array("d")
        self._duration = array("d")  # NaN: None
        self._steps = array("q")
        self._attempts = array("q")
        self._seed = array("q")  # _NONE: None
        self.params: dict[str, Column] = {}
        self.last: dict[str, Column] = {}
        # The learning curve of each row's last attempt: its points are curve_at[row] ... + curve_len[row].
        self._curve_steps = array("q")
        self._curve_values = array("d")
        self._curve_at = array("q")
        self._curve_len = array("q")
        self._sparse: dict[int, dict[str, Any]] = {}  # row -> the fields it has that most rows do not
        self._shared: dict[Any, Any] = {}  # equal distributions dicts and label dicts, kept once
        self.counts = dict.fromkeys(_STATES, 0)
        self.version = 0  # changes whenever a row is added or taken out: a reader's cache key

    def __len__(self) -> int:
        return sum(self.counts.values())

    def __contains__(self, trial_id: int) -> bool:
        return 0 <= trial_id < len(self._row_of) and self._row_of[trial_id] >= 0

    # --- written ---------------------------------------------------------------------------------------------
    def add(self, rec: TrialRecord) -> None:
        """Keep ``rec``, a trial that ended (replacing the row of a trial id kept already)."""
        self.add_fields(vars(rec))

    def add_fields(self, fields: dict[str, Any]) -> None:
        """Keep a trial that ended, given as its record's fields (``vars`` of its ``TrialRecord``, or its stored
        JSON, whose state and error kind are their values; a field it lacks has its default)."""
        trial_id = fields["trial_id"]
        if trial_id in self:
            self.remove(trial_id)
        row = len(self._ids)
        while len(self._row_of) <= trial_id:
            self._row_of.extend([-1] * max(1024, len(self._row_of)))
        self._row_of[trial_id] = row
        state = TrialState(fields["state"])
        duration, seed = fields.get("duration"), fields.get("seed")
        self._ids.append(trial_id)
        self._alive.append(1)
        self._state.append(_CODE_OF[state])
        self._value.append(fields.get("value"))
        self._started.append(fields["started"])
        self._duration.append(math.nan if duration is None else duration)
        self._steps.append(fields.get("steps", 0))
        self._attempts.append(fields.get("attempts", 0))
        self._seed.append(_NONE if seed is None or not fits(seed) else seed)
        _append_named(self.params, fields["params"], row)
        _append_named(self.last, fields.get("last") or {}, row)
        self.set_curve(row, fields.get("curve_steps", ()), fields.get("curve_values", ()))
        sparse = self._sparse_of(fields)
        if sparse:
            self._sparse[row] = sparse
        self.counts[state] += 1
        self.version += 1

    def add_all(self, trials: list[dict[str, Any]]) -> None:
        """``add_fields`` of every one of ``trials`` (a stored run read back), a column at a time: 100,000 trials
        in a third of the time that one at a time takes."""
        if len(self._ids):  # rows already: one at a time, as it replaces rows
            for fields in trials:
                self.add_fields(fields)
            return
        n = len(trials)
        ids = [fields["trial_id"] for fields in trials]
        if len(set(ids)) != n:  # the same trial twice: the later row replaces the earlier
            for fields in trials:
                self.add_fields(fields)
            return
        self._ids.extend(ids)
        self._row_of.extend([-1] * (max(ids, default=-1) + 1))
        for row, trial_id in enumerate(ids):
            self._row_of[trial_id] = row
        self._alive.extend(b"\x01" * n)
        codes = [_CODE_OF[fields["state"]] for fields in trials]
        self._state.extend(codes)
        self._value.extend([fields.get("value") for fields in trials])
        self._started.extend([fields["started"] for fields in trials])
        durations = [fields.get("duration") for fields in trials]
        self._duration.extend([math.nan if d is None else d for d in durations])
        self._steps.extend([fields.get("steps", 0) for fields in trials])
        self._attempts.extend([fields.get("attempts", 0) for fields in trials])
        seeds = [fields.get("seed") for fields in trials]
        self._seed.extend([_NONE if seed is None or not fits(seed) else seed for seed in seeds])
        _extend_named(self.params, [fields["params"] for fields in trials])
        _extend_named(self.last, [fields.get("last") or {} for fields in trials])
        for row, fields in enumerate(trials):
            if "curve_steps" in fields:
                self.set_curve(row, fields["curve_steps"], fields["curve_values"])
            else:
                self._curve_at.append(len(self._curve_steps))
                self._curve_len.append(0)
            seed = seeds[row]
            if fields.keys() & _SPARSE_NAMES or isinstance(seed, int) and not fits(seed):
                sparse = self._sparse_of(fields)
                if sparse:
                    self._sparse[row] = sparse
        for code in codes:
            self.counts[_STATES[code]] += 1
        self.version += 1

    def _sparse_of(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The fields of a trial most trials lack, where it has them (its default: None, False or empty)."""
        sparse = {}
        for name in fields.keys() & _SPARSE_NAMES:
            value = fields[name]
            if (
                value is None
                or (value is False or type(value) in (list, dict) and not value)
                and name not in _VALUES
            ):
                continue
            sparse[name] = self._share(value) if name in ("labels", "distributions") else value
        seed = fields.get("seed")
        if seed is not None and not fits(seed):
            sparse["seed"] = seed
        if "error_kind" in sparse:
            sparse["error_kind"] = ErrorKind(sparse["error_kind"])
        return sparse

    def set_curve(self, row: int, steps: Iterable[int], values: Iterable[float]) -> None:
        """Row ``row``'s learning curve is now ``steps``, ``values`` (a record read back gets its curves later)."""
        at = len(self._curve_steps)
        self._curve_steps.extend(steps)
        self._curve_values.extend(values)
        if row == len(self._curve_at):
            self._curve_at.append(at)
            self._curve_len.append(len(self._curve_steps) - at)
        else:
            self._curve_at[row], self._curve_len[row] = at, len(self._curve_steps) - at

    def add_output(self, row: int, stream: str, text: str) -> None:
        self._sparse.setdefault(row, {}).setdefault(stream, []).append(text)

    def remove(self, trial_id: int) -> None:
        """The trial runs again (a resumed run, ``exp.extend``): it is no longer among the ended ones."""
        row = self._row_of[trial_id]
        self._row_of[trial_id] = -1
        self._alive[row] = 0
        self.counts[_STATES[self._state[row]]] -= 1
        self.version += 1

    def _share(self, value: Any) -> Any:
        try:
            key = repr(sorted(value.items())) if isinstance(value, dict) else repr(value)
        except TypeError:
            return value
        return self._shared.setdefault(key, value)

    # --- read ----------------------------------------------------------------------------------------------
    def row(self, trial_id: int) -> int:
        """The row of an ended trial (KeyError for a trial that is not here)."""
        if trial_id not in self:
            raise KeyError(trial_id)
        return self._row_of[trial_id]

    def rows(self) -> list[int]:
        """The rows of the ended trials, by trial id."""
        return self.row_index().tolist()

    def row_index(self) -> Any:
        """``rows()`` as a NumPy array."""
        import numpy as np

        rows = numpy_copy(self._row_of, np.int64)
        return rows[rows >= 0]

    def state(self, row: int) -> TrialState:
        return _STATES[self._state[row]]

    def record(self, row: int) -> TrialRecord:
        """Row ``row`` as a new ``TrialRecord`` (the caller's to keep: changing it changes nothing here)."""
        duration, seed = self._duration[row], self._seed[row]
        at, n = self._curve_at[row], self._curve_len[row]
        rec = TrialRecord(
            self._ids[row],
            _named(self.params, row),
            state=_STATES[self._state[row]],
            value=self._value[row],
            started=self._started[row],
            duration=None if math.isnan(duration) else duration,
            steps=self._steps[row],
            attempts=self._attempts[row],
            last=_named(self.last, row),
            seed=None if seed == _NONE else seed,
            curve_steps=self._curve_steps[at : at + n].tolist(),
            curve_values=self._curve_values[at : at + n].tolist(),
        )
        for name, value in self._sparse.get(row, {}).items():
            setattr(rec, name, _copy(value))
        return rec

    def records(self, rows: Iterable[int]) -> list[TrialRecord]:
        return [self.record(row) for row in rows]

    def columns(self, rows: Any) -> dict[str, Any]:
        """The fields of ``rows`` (a NumPy index) a table shows, one array or list each (``params`` and ``last``:
        a dict of them by name; ``sparse``: the fields most rows lack, by position, for the rows that have some).
        A number column's missing values are NaN, as pandas makes a None among numbers."""
        import numpy as np

        codes = numpy_copy(self._state, np.uint8)[rows]
        seed = numpy_copy(self._seed, np.int64)[rows]
        unseeded = seed == _NONE
        if unseeded.all():
            seeds: Any = np.full(len(rows), None, dtype=object)
        elif unseeded.any():
            seeds = np.where(unseeded, math.nan, seed.astype(np.float64))
        else:
            seeds = seed
        position = {row: i for i, row in enumerate(rows.tolist())} if self._sparse else {}
        big = {position[row]: f["seed"] for row, f in self._sparse.items() if "seed" in f and row in position}
        if big:  # a seed past 64 bits: the column holds Python's ints, as a table of the records would
            seeds = [None if s == _NONE else s for s in seed.tolist()]
            for i, value in big.items():
                seeds[i] = value
        return {
            "trial_id": numpy_copy(self._ids, np.int64)[rows],
            "state": np.array([state.value for state in _STATES], dtype=object)[codes],
            "value": self._value.column(rows),
            "duration": numpy_copy(self._duration, np.float64)[rows],
            "steps": numpy_copy(self._steps, np.int64)[rows],
            "attempts": numpy_copy(self._attempts, np.int64)[rows],
            "seed": seeds,
            "params": {name: column.column(rows) for name, column in self.params.items()},
            "last": {name: column.column(rows) for name, column in self.last.items()},
            "sparse": {position[row]: fields for row, fields in self._sparse.items() if row in position},
        }

    def ranking(self, sign: float) -> tuple[Any, Any]:
        """The rows of completed trials with a finite value, best first (ties by trial id), and the rows of the
        others (pruned, failed, stopped, interrupted), by trial id: ``best_first``'s order for the ended."""
        import numpy as np

        rows = np.flatnonzero(numpy_copy(self._alive, np.uint8))
        ids = numpy_copy(self._ids, np.int64)[rows]
        by_id = np.argsort(ids, kind="stable")
        rows, ids = rows[by_id], ids[by_id]
        states = numpy_copy(self._state, np.uint8)[rows]
        values = self._value.floats(rows)
        ranked = (states == _CODE_OF[TrialState.COMPLETED]) & np.isfinite(values)
        best = rows[ranked][np.lexsort((ids[ranked], sign * values[ranked]))]
        return best, rows[~ranked]

    def best_row(self, sign: float) -> int | None:
        """The row of the best completed trial as the record keeps its best (``KeptRecord._consider_best``):
        the lowest ``sign * value`` among those with a value (an infinite one too), the first by id of equals."""
        import numpy as np

        rows = np.flatnonzero(numpy_copy(self._alive, np.uint8))
        rows = rows[numpy_copy(self._state, np.uint8)[rows] == _CODE_OF[TrialState.COMPLETED]]
        values = self._value.floats(rows)
        rows, values = rows[~np.isnan(values)], values[~np.isnan(values)]
        if not len(rows):
            return None
        return int(rows[np.lexsort((numpy_copy(self._ids, np.int64)[rows], sign * values))[0]])

    def totals(self, cap: int | None) -> dict[str, float]:
        """``ExperimentRecord.ended_totals`` of these rows: how many, their steps, seconds and steps capped at
        ``cap``."""
        import numpy as np

        alive = numpy_copy(self._alive, np.uint8).astype(bool)
        steps = numpy_copy(self._steps, np.int64)[alive]
        seconds = numpy_copy(self._duration, np.float64)[alive]
        return {
            "trials": int(alive.sum()),
            "steps": int(steps.sum()),
            "seconds": float(np.nansum(seconds)),
            "capped_steps": int(np.minimum(steps, cap).sum()) if cap else int(steps.sum()),
        }

    def sparse_rows(self, name: str, value: Any) -> list[int]:
        """The rows whose sparse field ``name`` is ``value`` (an error kind, say), by trial id."""
        rows = [row for row, fields in self._sparse.items() if fields.get(name) == value and self._alive[row]]
        return sorted(rows, key=self._ids.__getitem__)

    def varied(self) -> dict[str, set]:
        """Each parameter's distinct values (at most two: enough to say it varies), as ``repr``s, ``'None'`` for
        a row without it."""
        import numpy as np

        alive = np.flatnonzero(numpy_copy(self._alive, np.uint8))
        seen: dict[str, set] = {}
        for name, column in self.params.items():
            values = column.values
            if isinstance(values, array):
                odd = any(self._alive[row] for row in column.odd)
                kept = np.setdiff1d(alive, np.fromiter(column.odd, dtype=np.int64)) if column.odd else alive
                numbers = numpy_copy(values, np.float64 if values.typecode == "d" else np.int64)[kept]
                seen[name] = {repr(v) for v in np.unique(numbers)[:2].tolist()} | ({"None"} if odd else set())
            else:
                live = [values[row] for row in alive.tolist()]
                try:
                    distinct = set(live)
                except TypeError:  # unhashable values (an ablation trial's features): by their text
                    distinct = {repr(v) for v in live}
                seen[name] = {"None" if v is MISSING or v is None else repr(v) for v in list(distinct)[:2]}
        return seen


def _append_named(columns: dict[str, Column], values: dict[str, Any], row: int) -> None:
    for name, value in values.items():
        column = columns.get(name)
        if column is None:
            column = columns[name] = Column(row)
        column.append(value)
    if len(values) < len(
        columns
    ):  # a define-by-run trial without a parameter others had, a metric not reported
        for name, column in columns.items():
            if name not in values:
                column.append(MISSING)


def _extend_named(columns: dict[str, Column], values: list[dict[str, Any]]) -> None:
    """``_append_named`` of every row of ``values`` into columns with no rows yet, a column at a time."""
    names = dict.fromkeys(name for row in values for name in row)
    for name in names:
        column = columns[name] = Column()
        column.extend([row.get(name, MISSING) for row in values])


def _named(columns: dict[str, Column], row: int) -> dict[str, Any]:
    return {name: value for name, column in columns.items() if (value := column[row]) is not MISSING}


def _copy(value: Any) -> Any:
    """A row's own list or dict, copied for a record a caller may change."""
    return type(value)(value) if isinstance(value, (list, dict)) else value
