"""The store's schema (its tables, as SQL), the file's marks (application id, schema version), and who owns a run
being written (the process, so a reader can tell a run whose kernel died from one still going)."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable
from typing import Any

from . import _chunks, _utilization

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STOP_REQUESTS",
    "owner",
    "owner_alive",
]

SCHEMA_VERSION = 4
APPLICATION_ID = 0x4A445354  # "JDST"
# One statement per ";" (the schema is applied statement by statement): no ";" inside comments.
SCHEMA = """
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
CREATE TABLE logs (
    seq INTEGER PRIMARY KEY,
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id INTEGER NOT NULL,
    stream TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX logs_by_trial ON logs (experiment_id, trial_id, seq);
"""
# Schema 2: a Stop button (JupyterLab's, through the server) asks here, and the run's writer acts on it.
STOP_REQUESTS = """
CREATE TABLE stop_requests (
    experiment_id TEXT PRIMARY KEY REFERENCES experiments(id) ON DELETE CASCADE,
    requested REAL NOT NULL
)"""


SCHEMA += STOP_REQUESTS + ";"
# Schema 3: reports in chunks of batches (_chunks.py), where schema 2 had a row per report.
SCHEMA += _chunks.TABLE + ";"
# Schema 4: what each trial used, sampled about once a second on its worker (_utilization.py).
SCHEMA += _utilization.TABLE + ";"

# What brings a store of schema version N up to N + 1 (a store is migrated when opened, in one transaction).
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], object]] = {
    1: lambda conn: conn.execute(STOP_REQUESTS),
    2: _chunks.migrate_from_schema_2,
    3: _utilization.migrate_from_schema_3,
}


def owner() -> dict[str, Any]:
    """This process, as the owner of the runs it records."""
    try:
        import psutil

        started = psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - liveness then rests on the pid and the heartbeat
        started = 0.0
    return {"owner_host": socket.gethostname(), "owner_pid": os.getpid(), "owner_started": started}


def owner_alive(host: str, pid: int, started: float) -> bool | None:
    """Whether the process that owns a run still runs: None when that cannot be told from here (another host)."""
    if host != socket.gethostname():
        return None
    try:
        import psutil

        proc = psutil.Process(pid)
        return not started or abs(proc.create_time() - started) < 1.0
    except Exception:  # noqa: BLE001 - no such process (or not ours to see): not alive
        return False
