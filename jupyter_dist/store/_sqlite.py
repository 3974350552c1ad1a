"""The experiment store on disk: one SQLite file in WAL mode, shared by every kernel of a user. Every SQL statement
of jupyter_dist is in this module, _schema.py, _chunks.py (how reports lie in the file) and _utilization.py (the
trials' utilisation samples); the rest of the package reads and writes through ``Database``.

WAL lets readers (``experiments()``, ``load()``, another kernel, the server extension) read while a run writes;
each connection waits up to BUSY_TIMEOUT_S for another process's write transaction instead of failing with
"database is locked". Writes come in batches from one writer thread per run (_journal.py), so a transaction per
batch, not per report. On a network filesystem WAL is unsafe and the file is kept in the rollback journal mode
(DELETE) instead (_filesystem.py): there a batch's commit waits for the reads in progress and a read for a commit,
within the same busy timeout. Readers open the file read-write even so: the first connection after a killed
writer rolls its hot journal back, which a read-only one cannot do.

Reports are kept in chunks (_chunks.py, schema 3), each report numbered in arrival order across the file. Three
ways read them: ``report_page`` (at most n after a cursor: the REST API's paging, a live view following a run),
``reports`` (one tuple per report) and ``report_batches`` (the fast bulk path: whole batches as they arrived, with
the cursor of each one's last report, for ``history``, a loaded run's curves and a resume).

The file says what it is: ``PRAGMA application_id`` marks it as ours and ``PRAGMA user_version`` is the schema
version. A file that is not SQLite, or is someone else's database, or was written by a newer jupyter_dist, is
refused with an error naming the file; it is never modified, let alone replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreError
from . import _chunks, _utilization
from ._chunks import Batch
from ._filesystem import journal_mode, say_once
from ._schema import APPLICATION_ID, MIGRATIONS, SCHEMA, SCHEMA_VERSION

BUSY_TIMEOUT_S = 30.0


class Database:
    """A connection to the store file, checked and migrated on open. One per thread (sqlite3's rule)."""

    def __init__(self, path: str | os.PathLike, journal: str | None = None) -> None:
        """``journal``: "auto", "wal" or "delete" (None: dask config ``jupyter_dist.store-journal``); after
        opening, ``self.journal`` is the mode the file is in ("wal" or "delete")."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        wanted, _ = journal_mode(self.path, journal)
        try:
            self.conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
            self._check()
            self.journal = self._set_journal(wanted)
            # WAL + NORMAL: durable across a killed process. The rollback journal keeps FULL, its default: with
            # NORMAL a host (or NFS client) going down mid-commit can leave the file corrupt.
            self.conn.execute("PRAGMA synchronous=" + ("NORMAL" if self.journal == "wal" else "FULL"))
            self.conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a jupyter_dist experiment store ({exc}); it was left untouched. Point "
                "JUPYTER_DIST_STORE at another file, or move this one away."
            ) from None

    def _set_journal(self, wanted: str) -> str:
        try:
            return self.conn.execute(f"PRAGMA journal_mode={wanted}").fetchone()[0].lower()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
        # Leaving WAL needs the file to itself, and SQLite does not wait for it: another process has the store
        # open (a run of an older jupyter_dist, or one told "wal"). Go on in the file's mode; a later open
        # switches it once that process is done.
        current = self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower()
        say_once(
            logging.WARNING,
            "jupyter_dist: the experiment store %s stays in %s mode for now (%s wanted): another process has it open",
            self.path,
            current.upper(),
            wanted.upper(),
        )
        return current

    def _pragmas(self) -> tuple[int, int]:
        return (
            self.conn.execute("PRAGMA application_id").fetchone()[0],
            self.conn.execute("PRAGMA user_version").fetchone()[0],
        )

    def _check(self) -> None:
        app, version = self._pragmas()
        if app == 0 and version == 0 and not self._tables():  # a new (empty) file: make it a store
            with self.transaction():
                if (
                    not self._tables()
                ):  # asked again under the write lock: another process may have just done it
                    # one statement at a time: executescript() would commit outside this transaction
                    for statement in filter(str.strip, SCHEMA.split(";")):
                        self.conn.execute(statement)
                    self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            app, version = self._pragmas()
        if app != APPLICATION_ID:
            raise StoreError(
                f"{self.path} is an SQLite database of something else (application_id {app:#x}); it was left "
                "untouched. Point JUPYTER_DIST_STORE at another file."
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer jupyter_dist (store schema {version}; this one reads up to "
                f"{SCHEMA_VERSION}): upgrade jupyter_dist, or point JUPYTER_DIST_STORE at another file."
            )
        if version < SCHEMA_VERSION:
            self._migrate()

    def _migrate(self) -> None:
        on_disk = version = self._pragmas()[1]
        try:
            with self.transaction():
                version = self._pragmas()[1]  # again under the write lock: another process may have done it
                while version < SCHEMA_VERSION:
                    MIGRATIONS[version](self.conn)
                    version += 1
                    self.conn.execute(f"PRAGMA user_version={version}")
        except Exception as exc:
            raise StoreError(
                f"{self.path} could not be brought up to date (store schema {on_disk} to {SCHEMA_VERSION}): "
                f"{type(exc).__name__}: {exc}. The migration was rolled back and the file left as it was; "
                "point JUPYTER_DIST_STORE at another file, or open it with the jupyter_dist that wrote it."
            ) from exc
        # Schema 2's reports, now chunks, leave most of the file free: 110 MB back to 28 for 1M reports, in ~1.6 s,
        # once. If it cannot (another connection's transaction, no room for the copy), the file stays as big.
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        if free > self.conn.execute("PRAGMA page_count").fetchone()[0] // 2:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("VACUUM")

    def _tables(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    def transaction(self):
        return _Transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    # --- experiments ------------------------------------------------------------------------------------------
    def names_like(self, base: str) -> set[str]:
        rows = self.conn.execute(
            "SELECT name FROM experiments WHERE name = ? OR name LIKE ? ESCAPE '\\'",
            (base, _like_prefix(base) + "-%"),
        )
        return {r[0] for r in rows}

    def find(self, name_or_id: str) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT * FROM experiments WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1",
            (name_or_id, name_or_id, name_or_id),
        ).fetchone()

    def experiment_rows(self, experiment_id: str | None = None) -> list[sqlite3.Row]:
        """Every experiment's row (or only ``experiment_id``'s), oldest first."""
        return self.conn.execute(
            "SELECT * FROM experiments WHERE ?1 IS NULL OR id = ?1 ORDER BY created", (experiment_id,)
        ).fetchall()

    def insert_experiment(self, row: dict[str, Any]) -> None:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.conn.execute(f"INSERT INTO experiments ({columns}) VALUES ({marks})", tuple(row.values()))

    def update_experiment(self, experiment_id: str, values: dict[str, Any]) -> None:
        assignments = ", ".join(f"{column} = ?" for column in values)
        self.conn.execute(
            f"UPDATE experiments SET {assignments} WHERE id = ?", (*values.values(), experiment_id)
        )

    def request_stop(self, experiment_id: str) -> None:
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO stop_requests (experiment_id, requested) VALUES (?, ?)",
                (experiment_id, time.time()),
            )

    def stop_requested(self, experiment_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM stop_requests WHERE experiment_id = ?", (experiment_id,))
        return row.fetchone() is not None

    def forget_stop_request(self, experiment_id: str) -> None:
        """(Inside a transaction.) A resumed run starts without its last run's stop request."""
        self.conn.execute("DELETE FROM stop_requests WHERE experiment_id = ?", (experiment_id,))

    def trial_rows(self, experiment_id: str, results: bool = True) -> list[sqlite3.Row]:
        """Every trial's ``trial_id``, ``record`` (JSON) and ``result`` (pickled; None unless ``results``)."""
        result = "result" if results else "NULL AS result"
        return self.conn.execute(
            f"SELECT trial_id, record, {result} FROM trials WHERE experiment_id = ? ORDER BY trial_id",
            (experiment_id,),
        ).fetchall()

    def trial_record(self, experiment_id: str, trial_id: int) -> str | None:
        """One trial's record (JSON), or None if the experiment has no such trial."""
        row = self.conn.execute(
            "SELECT record FROM trials WHERE experiment_id = ? AND trial_id = ?", (experiment_id, trial_id)
        ).fetchone()
        return None if row is None else row[0]

    def report_batches(self, experiment_id: str, since: int = 0) -> list[tuple[int, int, int, list]]:
        """An experiment's reports after cursor ``since`` (0: all), as they arrived, batch by batch and not
        expanded: (cursor, trial_id, attempt number, rows), ``rows`` being ``[[step, metrics, sent_at], ...]``
        and ``cursor`` the sequence number of the batch's last report (``report_page``'s cursor, to go on from;
        a batch that ``since`` falls inside comes cut). The fast path for a reader that wants everything
        (``history``, a resume's curves): one msgpack decode per chunk of reports, no tuple per report, the
        garbage collector paused (1M reports: 0.4-0.65 s of CPU, against 3.7 s for schema 2's ``reports()``)."""
        with _chunks.gc_paused():
            return [
                (cursor, trial_id, attempt, rows)
                for cursor, (trial_id, attempt, rows) in _chunks.batches_after(
                    self.conn, experiment_id, since
                )
            ]

    def trial_report_batches(
        self, experiment_id: str, trials: Container[int], since: int = 0
    ) -> tuple[list[tuple[int, int, int, list]], int]:
        """``report_batches`` of the ``trials`` only, and the cursor of the experiment's last report (``since``
        when there is none after it): what a view's curves read. The other trials' batches are dropped as each
        chunk is decoded, so memory holds only what was asked for (a million reports of which 40 trials' are
        wanted: ~0.5 s of CPU, a few MB)."""
        kept, cursor = [], since
        with _chunks.gc_paused():
            for cursor, (trial_id, attempt, rows) in _chunks.batches_after(self.conn, experiment_id, since):
                if trial_id in trials:
                    kept.append((cursor, trial_id, attempt, rows))
        return kept, cursor

    def reports(self, experiment_id: str) -> Iterator[tuple[int, int, int, float, dict[str, float]]]:
        """An experiment's reports in arrival order: (trial_id, attempt number, step, sent_at, metrics)."""
        for _, trial_id, attempt, rows in self.report_batches(experiment_id):
            for step, metrics, sent_at in rows:
                yield trial_id, attempt, step, sent_at, metrics

    def report_page(
        self, experiment_id: str, since: int, limit: int
    ) -> list[tuple[int, int, int, int, float, dict[str, float]]]:
        """At most ``limit`` reports after cursor ``since`` (a report's ``seq``; 0: from the start), in arrival
        order: (seq, trial_id, attempt number, step, sent_at, metrics)."""
        page: list[tuple[int, int, int, int, float, dict[str, float]]] = []
        batches = _chunks.batches_after(self.conn, experiment_id, since)
        try:
            with _chunks.gc_paused():
                for cursor, (trial_id, attempt, rows) in batches:
                    seq = cursor - len(rows)
                    for step, metrics, sent_at in rows[: limit - len(page)]:
                        seq += 1
                        page.append((seq, trial_id, attempt, step, sent_at, metrics))
                    if len(page) >= limit:
                        break
        finally:
            batches.close()  # ends the query now, not when the generator is collected
        return page

    def report_count(self, experiment_id: str) -> int:
        """How many reports an experiment has in the file."""
        return _chunks.report_count(self.conn, experiment_id)

    def log_rows(self, experiment_id: str) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT trial_id, stream, text FROM logs WHERE experiment_id = ? ORDER BY seq", (experiment_id,)
        ).fetchall()

    def trial_output(self, experiment_id: str, trial_id: int) -> list[tuple[str, str]]:
        """One trial's captured output in order: (stream, text)."""
        rows = self.conn.execute(
            "SELECT stream, text FROM logs WHERE experiment_id = ? AND trial_id = ? ORDER BY seq",
            (experiment_id, trial_id),
        )
        return [(stream, text) for stream, text in rows]

    def utilization(
        self, experiment_id: str, since: int = 0, trial_id: int | None = None, limit: int = -1
    ) -> list[tuple[int, _utilization.Sample]]:
        """An experiment's utilisation samples (or ``trial_id``'s) after cursor ``since``: (cursor, sample)."""
        return _utilization.samples_after(self.conn, experiment_id, since, trial_id, limit)

    def write_batch(
        self,
        experiment_id: str,
        trials: dict[int, tuple[str, float | None, str, bytes | None]],
        reports: list[Batch],
        logs: list[tuple[int, str, str]],
        final: tuple[str, str | None, float] | None,
        utilization: list[_utilization.Sample] | None = None,
    ) -> None:
        """One run's writer's batch, in one transaction: ``trials`` (per trial id: state, value, record JSON,
        pickled result) replace their rows; ``reports`` (trial_id, attempt number, [[step, metrics, sent_at],
        ...]), ``logs`` (trial_id, stream, text) and ``utilization`` (_utilization.Sample) are appended; the
        heartbeat is stamped and, with ``final`` (state, error, ended), the run's end is recorded."""
        chunks = _chunks.packed(reports)
        with self.transaction() as conn:
            if chunks:
                _chunks.insert(conn, experiment_id, chunks)
            conn.executemany(
                "INSERT INTO logs (experiment_id, trial_id, stream, text) VALUES (?, ?, ?, ?)",
                [(experiment_id, trial_id, stream, text) for trial_id, stream, text in logs],
            )
            if utilization:
                _utilization.insert(conn, experiment_id, utilization)
            conn.executemany(
                "INSERT OR REPLACE INTO trials (experiment_id, trial_id, state, value, record, result) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(experiment_id, trial_id, *row) for trial_id, row in trials.items()],
            )
            if final is None:
                conn.execute(
                    "UPDATE experiments SET heartbeat = ? WHERE id = ?", (time.time(), experiment_id)
                )
            else:
                state, error, ended = final
                conn.execute(
                    "UPDATE experiments SET state = ?, error = ?, ended = ?, heartbeat = ? WHERE id = ?",
                    (state, error, ended, time.time(), experiment_id),
                )

    def completed_value_range(self, experiment_id: str | None = None) -> dict[str, tuple[float, float]]:
        """Per experiment (or only ``experiment_id``): the lowest and highest value of its completed trials."""
        rows = self.conn.execute(
            "SELECT experiment_id, min(value) AS lo, max(value) AS hi FROM trials "
            "WHERE state = 'completed' AND value IS NOT NULL AND (?1 IS NULL OR experiment_id = ?1) "
            "GROUP BY experiment_id",
            (experiment_id,),
        )
        return {r["experiment_id"]: (r["lo"], r["hi"]) for r in rows}

    def trial_summaries(self, experiment_id: str | None = None) -> dict[str, dict[str, Any]]:
        """Per experiment (or only ``experiment_id``): trials by state, for the listing (one query for all)."""
        out: dict[str, dict[str, Any]] = {}
        rows = self.conn.execute(
            "SELECT experiment_id, state, count(*) AS n FROM trials WHERE ?1 IS NULL OR experiment_id = ?1 "
            "GROUP BY experiment_id, state",
            (experiment_id,),
        )
        for r in rows:
            out.setdefault(r["experiment_id"], {})[r["state"]] = r["n"]
        return out

    # --- pages of trials, counted, ranked and cut in SQL (the REST detail of a 100,000-trial run) --------------
    def trial_count(self, experiment_id: str, state: str | None = None) -> int:
        """How many trials an experiment has (of ``state``, or all)."""
        return self.conn.execute(
            "SELECT count(*) FROM trials WHERE experiment_id = ?1 AND (?2 IS NULL OR state = ?2)",
            (experiment_id, state),
        ).fetchone()[0]

    def trial_records_of_state(self, experiment_id: str, state: str) -> list[str]:
        """The records (JSON) of the trials in ``state``, by trial id."""
        rows = self.conn.execute(
            "SELECT record FROM trials WHERE experiment_id = ? AND state = ? ORDER BY trial_id",
            (experiment_id, state),
        )
        return [r[0] for r in rows]

    def ranked_trial_records(
        self,
        experiment_id: str,
        offset: int,
        limit: int,
        *,
        best_first: bool,
        maximize: bool = False,
        live: bool = True,
        state: str | None = None,
    ) -> list[str]:
        """A page of trial records (JSON) of one ``state`` (or all): by trial id, or ``best_first`` in
        ``store.best_first``'s order (completed trials with a finite value, best first by ``maximize``, ties by id;
        then, of a ``live`` run, the running trials newest first; then the rest by id). The trials are ranked on
        their columns alone and only the page's records read."""
        finite = "state = 'completed' AND value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308"
        running = "state = 'running' AND ?5"
        order = (
            f"CASE WHEN {finite} THEN 0 WHEN {running} THEN 1 ELSE 2 END, "
            f"CASE WHEN {finite} THEN value * ?6 END, "
            f"CASE WHEN {running} THEN -trial_id ELSE trial_id END"
            if best_first
            else "trial_id"
        )
        ids = [
            r[0]
            for r in self.conn.execute(
                "SELECT trial_id FROM trials WHERE experiment_id = ?1 AND (?2 IS NULL OR state = ?2) "
                f"ORDER BY {order} LIMIT ?3 OFFSET ?4",
                (
                    experiment_id,
                    state,
                    limit,
                    offset,
                    *((int(live), -1.0 if maximize else 1.0) if best_first else ()),
                ),
            )
        ]
        if not ids:
            return []
        records = dict(
            self.conn.execute(
                "SELECT trial_id, record FROM trials WHERE experiment_id = ? AND trial_id IN "
                f"({','.join('?' * len(ids))})",
                (experiment_id, *ids),
            ).fetchall()
        )
        return [records[i] for i in ids]


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so two writers queue instead of deadlocking."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind, exc, tb) -> None:
        self.conn.execute("ROLLBACK" if kind else "COMMIT")
