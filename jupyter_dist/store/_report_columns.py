"""``exp.history``'s columns, built from the report batches without a Python tuple per row.

A record's reports are batches, ``(trial_id, attempt number, [[step, {metric: value}, sent_at], ...])``, in
arrival order: in the store as packed chunks (_chunks.py), still pending in a run's journal, or kept in memory by a
run without a store. ``exp.history`` wants one row per reported metric, (trial_id, attempt, step, metric, value,
time): ``report_rows()`` made a 6-tuple per row and pandas read them back one by one, 4.7 s per million rows. Here
each group of batches becomes columns at C speed: the reports are collected with ``map``/``itemgetter``, the
metric names and values walked with ``chain.from_iterable`` over the metrics dicts straight into
``numpy.fromiter``, and the per-batch and per-report columns repeated with ``numpy.repeat``; a stored chunk is
decoded with tuples for its lists (``use_list=False``, cheaper to make), outside any lock, the garbage collector
paused. What is left per row is msgpack's decode of it (~0.25-0.4 us of CPU a report, measured).

The rows come in the order ``report_rows()`` yields them (batch by batch, report by report, each report's metrics
in the order it gave them), with the same values: ``tests/store/test_report_columns.py`` holds the two equal.

The columns, as every function here returns them (``COLUMNS``, in the order of ``exp.history``'s):
``trial_id``, ``attempt``, ``step`` (int64), ``metric`` (object: the names, ``str``), ``value`` (float64), ``time``
(float64: ``sent_at``, seconds since the epoch; ``history_frame`` makes it datetime64). A value or step numpy
cannot hold as such (an int past 64 bits, read from a JSON chunk) leaves that column as objects.

Three sources, one per kind of record (``InMemoryRecord.report_columns``):

- ``columns_from_journal``: a stored run, live or just finished (the file's chunks and what is still pending);
- ``columns_from_store``: a record read back from the store (``load()``), without rebuilding its curves;
- ``columns_from_batches``: the batches a run without a store keeps in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np

from . import _chunks
from ._sqlite import Database

if TYPE_CHECKING:
    from ._journal import Journal

COLUMNS = ("trial_id", "attempt", "step", "metric", "value", "time")

# Batches are turned into columns this many reports at a time: numpy's per-call cost stays negligible (a group is
# ~20 numpy calls) while the decoded Python objects of only one group are alive at once.
GROUP_REPORTS = 1 << 16

_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def columns_from_journal(journal: Journal) -> dict[str, np.ndarray]:
    """(a) A stored run's reports, live or just finished: every batch handed to ``journal`` so far, written or
    still pending (``Journal.reports_so_far``; the write lock is held only to read the packed chunks)."""
    packed, pending = journal.reports_so_far()
    return columns_from_packed(packed, pending)


def columns_from_store(
    path: str, experiment_id: str, trials: Container[int] | None = None
) -> dict[str, np.ndarray]:
    """(b) A stored experiment's reports, read from the store at ``path`` (``load()``'s record, whose learning
    curves are not rebuilt for this). ``trials``: keep only these trials' reports, as a loaded record does (it
    drops reports of a trial it has no row of); None keeps all."""
    db = Database(path)
    try:
        packed = _chunks.packed_reports(db.conn, experiment_id)
    finally:
        db.close()
    return columns_from_packed(packed, (), trials)


def columns_from_batches(batches: Iterable[_chunks.Batch]) -> dict[str, np.ndarray]:
    """(c) Report batches in arrival order, ``(trial_id, attempt number, [[step, metrics, sent_at], ...])``: what
    a run without a store keeps in memory (a snapshot of the list: it may still be appended to)."""
    builder = _Builder()
    with _chunks.gc_paused():
        builder.add_all(batches)
    return builder.columns()


def columns_from_packed(
    packed: Iterable[bytes | str], pending: Iterable[_chunks.Batch] = (), trials: Container[int] | None = None
) -> dict[str, np.ndarray]:
    """Stored chunks (``_codec.pack_reports``' values, in arrival order) and then the ``pending`` batches, as
    columns; ``trials``: only these trials' batches (None: all)."""
    builder = _Builder()
    with _chunks.gc_paused():
        group: list = []
        size = 0
        for blob in packed:
            batches = _unpacked(blob)
            if trials is not None:
                batches = [b for b in batches if b[0] in trials]
            group.extend(batches)
            size += sum(map(len, map(_third, batches)))
            if size >= GROUP_REPORTS:
                builder.add(group)
                group, size = [], 0
        builder.add(group)
        group = []
        pending = pending if trials is None else [b for b in pending if b[0] in trials]
        builder.add_all(pending)
    return builder.columns()


def _unpacked(blob: bytes | str) -> list:
    """``_codec.unpack_reports``, with tuples for msgpack's arrays (a third cheaper to make than lists)."""
    return msgpack.unpackb(blob, use_list=False) if isinstance(blob, bytes) else json.loads(blob)


class _Codes(dict):
    """Metric name -> its number, numbered as first seen."""

    def __missing__(self, name: str) -> int:
        code = self[name] = len(self)
        return code


class _Builder:
    """Columns built a group of batches at a time, joined at the end."""

    def __init__(self) -> None:
        self._codes = _Codes()
        self._parts: list[tuple[np.ndarray, ...]] = []

    def add_all(self, batches: Iterable[_chunks.Batch]) -> None:
        group: list = []
        size = 0
        for batch in batches:
            group.append(batch)
            size += len(batch[2])
            if size >= GROUP_REPORTS:
                self.add(group)
                group, size = [], 0
        self.add(group)

    def add(self, batches: list) -> None:
        """One group of batches (lists or tuples), as one part of each column."""
        if not batches:
            return
        rows_of = list(map(_third, batches))
        per_batch = np.fromiter(map(len, rows_of), np.int64, len(batches))
        reports = list(chain.from_iterable(rows_of))
        n_reports = len(reports)
        dicts = list(map(_second, reports))
        value = _array(lambda: chain.from_iterable(map(dict.values, dicts)), np.float64, -1)
        n = len(value)
        metric = np.fromiter(map(self._codes.__getitem__, chain.from_iterable(dicts)), np.int32, n)
        trial_id = np.repeat(_array(lambda: map(_first, batches), np.int64, len(batches)), per_batch)
        attempt = np.repeat(_array(lambda: map(_second, batches), np.int64, len(batches)), per_batch)
        step = _array(lambda: map(_first, reports), np.int64, n_reports)
        sent_at = _array(lambda: map(_third, reports), np.float64, n_reports)
        if n != n_reports:  # not one metric a report: each report's columns repeated for its metrics
            per_report = np.fromiter(map(len, dicts), np.int64, n_reports)
            trial_id, attempt, step, sent_at = (
                np.repeat(c, per_report) for c in (trial_id, attempt, step, sent_at)
            )
        self._parts.append((trial_id, attempt, step, metric, value, sent_at))

    def columns(self) -> dict[str, np.ndarray]:
        if not self._parts:
            return _empty()
        joined = [_joined(part) for part in zip(*self._parts, strict=True)]
        names = np.empty(len(self._codes), dtype=object)
        names[:] = list(self._codes)
        joined[3] = names[joined[3]]
        return dict(zip(COLUMNS, joined, strict=True))


def _joined(parts: tuple[np.ndarray, ...]) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    if len({p.dtype for p in parts}) > 1:  # a part that fell back to objects: the whole column does
        return np.concatenate([p.astype(object) for p in parts])
    return np.concatenate(parts)


def _array(values: Callable[[], Iterable[Any]], dtype: type, count: int) -> np.ndarray:
    """``values()`` as an array of ``dtype``; of objects where numpy cannot hold one as such (a step past 64
    bits), as pandas would have them."""
    try:
        return np.fromiter(values(), dtype, count)
    except (TypeError, ValueError, OverflowError):
        return _objects(values(), count)


def _objects(values: Iterable[Any], count: int) -> np.ndarray:
    listed = list(values)
    out = np.empty(len(listed), dtype=object)
    out[:] = listed
    return out


def _empty() -> dict[str, np.ndarray]:
    dtypes: list[Any] = [np.int64, np.int64, np.int64, object, np.float64, np.float64]
    return {name: np.empty(0, dtype) for name, dtype in zip(COLUMNS, dtypes, strict=True)}
