"""The store's SQL on what a run is: its experiment's row, its stop request and its trials' rows, and the write
transaction every write of the store takes. ``RunRows`` is the lowest of ``Database``'s classes (_sqlite_reports.py
adds what a run appends; _sqlite.py opens the file).

The REST detail's pages of trials are counted, ranked and cut here, in SQL on the trials' columns, so that a page of
a 100,000-trial run reads only the records it shows. Kept apart from the opening and migrating of the file (a
concern of its own) and from the reports (streams, read after a cursor).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any


class RunRows:
    """The experiments', stop requests' and trials' rows of the store file open on ``conn``."""

    conn: sqlite3.Connection

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

    # --- trials -----------------------------------------------------------------------------------------------
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
