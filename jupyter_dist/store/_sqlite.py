"""The experiment store on disk: one SQLite file in WAL mode, shared by every kernel of a user. ``Database`` opens it
(checked, migrated, its journal mode set) on top of its SQL, kept by subject in the classes it is built on:
_sqlite_runs.py (the experiments' and trials' rows) and _sqlite_reports.py (the reports, output and utilisation
samples a run appends). Every SQL statement of jupyter_dist is in these three modules, _schema.py, _chunks.py (how
reports lie in the file) and _utilization.py (the trials' utilisation samples); the rest of the package reads and
writes through ``Database``.

WAL lets readers (``experiments()``, ``load()``, another kernel, the server extension) read while a run writes;
each connection waits up to BUSY_TIMEOUT_S for another process's write transaction instead of failing with
"database is locked". Writes come in batches from one writer thread per run (_journal.py), so a transaction per
batch, not per report. On a network filesystem WAL is unsafe and the file is kept in the rollback journal mode
(DELETE) instead (_filesystem.py): there a batch's commit waits for the reads in progress and a read for a commit,
within the same busy timeout. Readers open the file read-write even so: the first connection after a killed
writer rolls its hot journal back, which a read-only one cannot do.

The file says what it is: ``PRAGMA application_id`` marks it as ours and ``PRAGMA user_version`` is the schema
version. A file that is not SQLite, or is someone else's database, or was written by a newer jupyter_dist, is
refused with an error naming the file; it is never modified, let alone replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

from ..errors import StoreError
from ._filesystem import journal_mode, say_once
from ._schema import APPLICATION_ID, MIGRATIONS, SCHEMA, SCHEMA_VERSION
from ._sqlite_reports import ReportRows

BUSY_TIMEOUT_S = 30.0


class Database(ReportRows):
    """A connection to the store file, checked and migrated on open. One per thread (sqlite3's rule). Its queries
    are its bases': ``ReportRows`` (_sqlite_reports.py) on ``RunRows`` (_sqlite_runs.py)."""

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
