"""One store file as the server extension serves it: the listing, an experiment's detail, its reports after a
cursor, a trial's output, and the one write a reader makes, a stop request (the run's own writer acts on it).

Every answer is a wire type (_wire.py), JSON-ready. Arguments are checked before any query: a malformed id or page
is an ``ArgumentError``, an experiment or trial the store lacks ``NotInStore``, a stop asked of an ended run
``NotRunning`` (the REST API answers 400, 404 and 409).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ArgumentError, NotInStore, NotRunning
from ..protocol import ExperimentState
from ._catalog import list_experiments, record_of, state_of
from ._codec import finite
from ._detail import experiment_detail
from ._memory import InMemoryRecord
from ._sqlite import Database
from ._wire import ExperimentDetail, ExperimentList, MetricsPage, TrialLogs

__all__ = ["MAX_PAGE", "StoreReader"]

# The store's ids (``new_experiment_id``): anything else is refused before it reaches a query.
EXPERIMENT_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
MAX_PAGE = 10_000
METRICS_COLUMNS = ["trial_id", "attempt", "step", "sent_at", "metrics"]


def _check_id(experiment_id: str) -> None:
    if not EXPERIMENT_ID.match(experiment_id):
        raise ArgumentError(f"{experiment_id!r} is not an experiment id (like 20261123-141502-3f9a1c)")


def _check_page(offset: int, limit: int) -> None:
    if offset < 0 or not 0 < limit <= MAX_PAGE:
        raise ArgumentError(f"offset >= 0 and 0 < limit <= {MAX_PAGE}")


class StoreReader:
    """The experiments of one store file (``path``; None: no store), read as the views show them."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    @contextmanager
    def _opened(self, experiment_id: str) -> Iterator[tuple[Database, sqlite3.Row]]:
        """The store, open, and ``experiment_id``'s row, once it is known to be a valid id that the store holds."""
        _check_id(experiment_id)
        if not self.path or not Path(self.path).exists():
            raise NotInStore("no experiment has been recorded yet")
        db = Database(self.path)
        try:
            row = db.find(experiment_id)
            if row is None:
                raise NotInStore(f"no experiment {experiment_id} in the store")
            yield db, row
        finally:
            db.close()

    def experiments(self, offset: int = 0, limit: int = 100) -> ExperimentList:
        """A page of the listing, newest first, and how many experiments there are."""
        _check_page(offset, limit)
        rows = list_experiments(self.path) if self.path else []
        rows.reverse()
        return {"experiments": finite(rows[offset : offset + limit]), "total": len(rows)}

    def detail(self, experiment_id: str) -> ExperimentDetail:
        """The experiment and every trial, built as the kernel builds its snapshot (``experiment_detail``)."""
        with self._opened(experiment_id) as (db, row):
            record = record_of(db, row, self.path, results=False)
        return experiment_detail(record, json.loads(row["about"]))

    def record(self, experiment_id: str) -> InMemoryRecord:
        """The experiment as a record read back (its reports read when first asked for), for what the server
        computes from it (parameter importances)."""
        with self._opened(experiment_id) as (db, row):
            return record_of(db, row, self.path, results=False)

    def metrics_page(self, experiment_id: str, since: int = 0, limit: int = MAX_PAGE) -> MetricsPage:
        """Reports after cursor ``since`` (0: from the start), at most ``limit``; ``cursor`` for the next call."""
        _check_page(since, limit)
        with self._opened(experiment_id) as (db, _):
            rows = db.report_page(experiment_id, since, limit + 1)
        page = rows[:limit]
        return {
            "columns": list(METRICS_COLUMNS),
            "rows": [finite(list(row[1:])) for row in page],
            "cursor": page[-1][0] if page else since,
            "more": len(rows) > limit,
        }

    def logs(self, experiment_id: str, trial_id: int) -> TrialLogs:
        """A trial's captured stdout and stderr, and its traceback if it failed."""
        with self._opened(experiment_id) as (db, _):
            record = db.trial_record(experiment_id, trial_id)
            if record is None:
                raise NotInStore(f"experiment {experiment_id} has no trial {trial_id}")
            lines = db.trial_output(experiment_id, trial_id)
        return {
            "trial_id": trial_id,
            "stdout": "".join(text for stream, text in lines if stream == "stdout"),
            "stderr": "".join(text for stream, text in lines if stream == "stderr"),
            "error": json.loads(record).get("error"),
        }

    def request_stop(self, experiment_id: str) -> None:
        """Ask the kernel running ``experiment_id`` to stop it: its store writer sees the request within a flush
        interval (0.5 s) and stops the run as the notebook's Stop would."""
        with self._opened(experiment_id) as (db, row):
            state = state_of(row)
            if state != ExperimentState.RUNNING.value:
                raise NotRunning(f"experiment {experiment_id} is not running ({state})")
            db.request_stop(experiment_id)
