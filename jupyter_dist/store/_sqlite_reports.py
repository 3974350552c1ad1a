"""The store's SQL on what a run appends as it goes, its reports, its trials' output and their utilisation samples:
``ReportRows``, the middle one of ``Database``'s classes (on ``RunRows``, _sqlite_runs.py; _sqlite.py opens the file).

A run's writer thread (_journal.py) hands them over in batches, each batch one write transaction (``write_batch``)
that also replaces the rows of the trials it changed and stamps the run's heartbeat.

Reports are kept in chunks (_chunks.py, schema 3), each report numbered in arrival order across the file. Three
ways read them: ``report_page`` (at most n after a cursor: the REST API's paging, a live view following a run),
``reports`` (one tuple per report) and ``report_batches`` (the fast bulk path: whole batches as they arrived, with
the cursor of each one's last report, for ``history``, a loaded run's curves and a resume).

Kept apart from the experiments' and trials' rows because these are streams, read in bulk or page by page after
a cursor, where those are a row each, read by id.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Container, Iterator

from . import _chunks, _utilization
from ._chunks import Batch
from ._sqlite_runs import RunRows


class ReportRows(RunRows):
    """An open store file's reports, trial output and utilisation samples, on top of its runs' rows."""

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
