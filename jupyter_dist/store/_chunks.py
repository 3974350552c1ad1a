"""How reports lie in the store (schema 3): chunks of report batches, one row each, numbered report by report.

A run's writer (_journal.py) commits what arrived in the last flush interval as a few rows of ``report_chunks``:
the batches in arrival order, up to CHUNK_REPORTS reports a row, packed in one msgpack value
(``_codec.pack_reports``). Every report still has its own sequence number, global to the file as schema 2's
``reports.seq`` was: a chunk holds the reports ``last_seq - count + 1 .. last_seq``, numbered inside the
writer's write transaction, so a reader's cursor ("the reports after this one") can start or end inside a chunk,
and the cursors a client was given before the migration from schema 2 still mean the same reports.

Why chunks, not one row per report (schema 2) nor one per batch: in bench_scale's shape (trials of 100 tight-loop
reports; per-thread CPU times, 200k and 1M reports) schema 2's writer thread spent 4.4-6.4 us of the kernel's CPU
per report on a row, an index entry and a JSON text per report; chunks take it to 0.5-1.1 us. Writing 200k
reports through ``Database.write_batch``, measured: in batches of 50, a row per batch 0.31 us a report, chunks 0.24;
in batches of 2 (many trials reporting slowly), a row per batch 2.0 us and 64 bytes a report, chunks 0.43 us and 27
bytes. A chunk costs one insert and one msgpack call per CHUNK_REPORTS reports, whatever the batches.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
import threading
from collections.abc import Generator, Iterator

from ._codec import pack_reports, unpack_reports

# Reports per chunk, at most (a batch is never split, so one bigger batch makes a bigger chunk). A page of the
# REST API that starts or ends inside a chunk decodes it whole: 0.4-1.2 us a report, at most ~1 ms a chunk.
CHUNK_REPORTS = 1000

TABLE = """
CREATE TABLE report_chunks (
    last_seq INTEGER PRIMARY KEY,  -- its last report's sequence number: it holds last_seq - count + 1 .. last_seq
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    count INTEGER NOT NULL,        -- how many reports it holds
    batches BLOB NOT NULL          -- _codec.pack_reports: [[trial_id, attempt, [[step, metrics, sent_at], ...]], ...]
);
CREATE INDEX report_chunks_by_experiment ON report_chunks (experiment_id, last_seq)"""

Batch = tuple[int, int, list]  # (trial_id, attempt number, [[step, metrics, sent_at], ...])


def packed(batches: list[Batch]) -> list[tuple[int, bytes | str]]:
    """``batches`` (in arrival order) as chunks to insert: (how many reports, packed). Done before the write
    transaction, so the file's write lock is held for the inserts only."""
    out: list[tuple[int, bytes | str]] = []
    start = count = 0
    for i, (_, _, rows) in enumerate(batches):
        count += len(rows)
        if count >= CHUNK_REPORTS:
            out.append((count, pack_reports(batches[start : i + 1])))
            start, count = i + 1, 0
    if count:
        out.append((count, pack_reports(batches[start:])))
    return out


def insert(conn: sqlite3.Connection, experiment_id: str, chunks: list[tuple[int, bytes | str]]) -> None:
    """(Inside a write transaction.) Append ``packed`` chunks, numbering their reports on from the file's last."""
    last = conn.execute("SELECT coalesce(max(last_seq), 0) FROM report_chunks").fetchone()[0]
    rows = []
    for count, blob in chunks:
        last += count
        rows.append((last, experiment_id, count, blob))
    conn.executemany(
        "INSERT INTO report_chunks (last_seq, experiment_id, count, batches) VALUES (?, ?, ?, ?)", rows
    )


def batches_after(
    conn: sqlite3.Connection, experiment_id: str, since: int
) -> Generator[tuple[int, Batch], None, None]:
    """An experiment's report batches in arrival order, without the reports numbered ``since`` or before (a batch
    that ``since`` falls inside comes cut): (its last report's sequence number, batch)."""
    rows = conn.execute(
        "SELECT last_seq, count, batches FROM report_chunks WHERE experiment_id = ? AND last_seq > ? "
        "ORDER BY last_seq",
        (experiment_id, since),
    )
    for last, count, blob in rows:
        seq = last - count  # the number before the chunk's first report
        for trial_id, attempt, reports in unpack_reports(blob):
            end = seq + len(reports)
            if end > since:
                yield end, (trial_id, attempt, reports if seq >= since else reports[since - seq :])
            seq = end


def packed_reports(conn: sqlite3.Connection, experiment_id: str) -> list[bytes | str]:
    """An experiment's chunks as stored (``pack_reports``' values), in arrival order: for a reader that decodes
    them itself, after letting go of what it held to read them (``exp.history``'s columns, _report_columns.py)."""
    rows = conn.execute(
        "SELECT batches FROM report_chunks WHERE experiment_id = ? ORDER BY last_seq", (experiment_id,)
    )
    return [row[0] for row in rows]


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection while a reader decodes reports in bulk (``history``, a resume's curves, a page of
    the REST API); threads may nest and overlap these. Decoding 1M reports made ~2M lists, and the collections
    their allocation triggered took ~3/4 of the read's CPU (1.25 s against 0.33 s with it paused, measured)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if not _gc_pauses:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if not _gc_pauses and _gc_was_enabled:
                gc.enable()


def report_count(conn: sqlite3.Connection, experiment_id: str) -> int:
    return conn.execute(
        "SELECT coalesce(sum(count), 0) FROM report_chunks WHERE experiment_id = ?", (experiment_id,)
    ).fetchone()[0]


def migrate_from_schema_2(conn: sqlite3.Connection) -> None:
    """(Inside the migration's transaction.) Schema 2's ``reports``, one row per report, become chunks holding
    the same reports under the same sequence numbers: a chunk takes a run of one experiment's rows whose numbers
    follow each other (two runs writing the file at once interleaved theirs), so every old cursor still points
    between the same two reports. Measured: ~4 us a report (a 1M-report store, once)."""
    for statement in TABLE.split(";"):
        conn.execute(statement)
    rows = conn.execute(
        "SELECT experiment_id, seq, trial_id, attempt, step, sent_at, metrics FROM reports "
        "ORDER BY experiment_id, seq"
    )
    pending: list[tuple] = []  # chunks not inserted yet: (last seq, experiment_id, count, packed batches)
    batches: list[tuple[int, int, list]] = []  # (trial_id, attempt, [[step, metrics, sent_at], ...]) each
    experiment, count, last = None, 0, -1
    loads = json.loads
    for experiment_id, seq, trial_id, attempt, step, sent_at, metrics in rows:
        if experiment_id != experiment or seq != last + 1 or count >= CHUNK_REPORTS:
            if count:
                pending.append((last, experiment, count, pack_reports(batches)))
            experiment, batches, count = experiment_id, [], 0
        if batches and batches[-1][0] == trial_id and batches[-1][1] == attempt:
            batches[-1][2].append([step, loads(metrics), sent_at])
        else:
            batches.append((trial_id, attempt, [[step, loads(metrics), sent_at]]))
        count, last = count + 1, seq
        if len(pending) >= 100:
            _insert_numbered(conn, pending)
    if count:
        pending.append((last, experiment, count, pack_reports(batches)))
    _insert_numbered(conn, pending)
    conn.execute("DROP TABLE reports")  # and its index


def _insert_numbered(conn: sqlite3.Connection, pending: list[tuple]) -> None:
    conn.executemany(
        "INSERT INTO report_chunks (last_seq, experiment_id, count, batches) VALUES (?, ?, ?, ?)", pending
    )
    pending.clear()
