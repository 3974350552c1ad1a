"""A store file as jupyter_dist 0.4's schema 2 wrote it: its SQL, kept here as it was, and its writer's inserts.

The migration tests write real runs (records of runs made with store=False) into such a file, one row per
report, the way schema 2's journal did, then open it with today's code.
"""

from __future__ import annotations

import json
import socket
import sqlite3
from typing import Any

from jupyter_dist.store import InMemoryRecord
from jupyter_dist.store._codec import definition_to_json, dumps, trial_to_json

APPLICATION_ID = 0x4A445354

SCHEMA_2 = """
CREATE TABLE experiments (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    error TEXT,                    -- what its end says: a failed run's error, or how a planned end came
    definition TEXT NOT NULL,      -- JSON: _codec.definition_to_json
    about TEXT NOT NULL,           -- JSON: function, source, versions, cluster, search settings
    created REAL NOT NULL,
    ended REAL,
    heartbeat REAL NOT NULL,       -- the owning kernel writes it while the run is alive
    owner_host TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_started REAL NOT NULL    -- the owner process's start time: a recycled pid is not the owner
);
CREATE TABLE trials (
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id INTEGER NOT NULL,
    state TEXT NOT NULL,           -- also in record: as columns, listings need no JSON parsing
    value REAL,
    record TEXT NOT NULL,          -- JSON: _codec.trial_to_json (NaN allowed, so not for SQLite's JSON functions)
    result BLOB,                   -- a data-parallel trial's return values, pickled, when they pickle
    PRIMARY KEY (experiment_id, trial_id)
);
CREATE TABLE reports (
    seq INTEGER PRIMARY KEY,       -- arrival order: the cursor a live reader resumes from
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    step INTEGER NOT NULL,
    sent_at REAL NOT NULL,
    metrics TEXT NOT NULL          -- JSON object of one report() call
);
CREATE INDEX reports_by_experiment ON reports (experiment_id, seq);
CREATE TABLE logs (
    seq INTEGER PRIMARY KEY,
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id INTEGER NOT NULL,
    stream TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX logs_by_trial ON logs (experiment_id, trial_id, seq);
CREATE TABLE stop_requests (
    experiment_id TEXT PRIMARY KEY REFERENCES experiments(id) ON DELETE CASCADE,
    requested REAL NOT NULL
)"""

# Schema 2's report_page, as it was: what a client's cursor meant then.
PAGE_2 = (
    "SELECT seq, trial_id, attempt, step, sent_at, metrics FROM reports "
    "WHERE experiment_id = ? AND seq > ? ORDER BY seq LIMIT ?"
)


def write_schema_2(path: str, records: list[InMemoryRecord]) -> None:
    """A schema-2 store holding ``records`` (ended runs), their report batches interleaved in arrival order as
    two runs writing one file at once leave them (each batch a run of consecutive numbers, the runs' batches
    alternating), with their trials and output."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for statement in SCHEMA_2.split(";"):
        conn.execute(statement)
    for record in records:
        _experiment(conn, record)
    queues = [[(record.definition.id, *batch) for batch in record._batches] for record in records]
    while any(queues):
        for queue in queues:
            if queue:
                experiment_id, trial_id, attempt, rows = queue.pop(0)
                conn.executemany(  # schema 2's write_batch, as it was
                    "INSERT INTO reports (experiment_id, trial_id, attempt, step, sent_at, metrics) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (experiment_id, trial_id, attempt, step, sent_at, dumps(metrics))
                        for step, metrics, sent_at in rows
                    ],
                )
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=2")
    conn.execute("COMMIT")
    conn.close()


def _experiment(conn: sqlite3.Connection, record: InMemoryRecord) -> None:
    definition = record.definition
    row: dict[str, Any] = {
        "id": definition.id,
        "name": definition.name,
        "kind": definition.kind,
        "state": record.state.value,
        "error": record.message,
        "definition": definition_to_json(definition),
        "about": json.dumps({"function": "written by schema 2"}),
        "created": definition.created,
        "ended": record.ended,
        "heartbeat": record.ended,
        "owner_host": socket.gethostname(),
        "owner_pid": 999_999_999,
        "owner_started": 0.0,
    }
    conn.execute(
        f"INSERT INTO experiments ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        tuple(row.values()),
    )
    for rec in record.trial_records():
        conn.execute(
            "INSERT INTO trials (experiment_id, trial_id, state, value, record, result) VALUES (?, ?, ?, ?, ?, ?)",
            (definition.id, rec.trial_id, rec.state.value, rec.value, trial_to_json(rec), None),
        )
        for stream, lines in (("stdout", rec.stdout), ("stderr", rec.stderr)):
            for text in lines:
                conn.execute(
                    "INSERT INTO logs (experiment_id, trial_id, stream, text) VALUES (?, ?, ?, ?)",
                    (definition.id, rec.trial_id, stream, text),
                )


def pages_2(path: str, experiment_id: str, limit: int) -> list[tuple[int, list]]:
    """Every page of an experiment's reports as schema 2 served them: (the cursor it was asked with, its rows)."""
    conn = sqlite3.connect(path)
    try:
        pages, since = [], 0
        while True:
            rows = conn.execute(PAGE_2, (experiment_id, since, limit)).fetchall()
            if not rows:
                return pages
            pages.append((since, [(*row[:5], json.loads(row[5])) for row in rows]))
            since = rows[-1][0]
    finally:
        conn.close()
