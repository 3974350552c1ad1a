"""The first half of the server extension's reader (``StoreReader``, _reader.py, adds the rest): the store opened
for one experiment once its id is known valid and held, the listing, an experiment's detail and its pages of trials.

The detail and the pages are read with SQL on the store's columns (``Database.ranked_trial_records``), so a
100,000-trial run's answer is read and sent as fast as a small one's. A run whose kernel is gone is shown as it
ended: the trials it left running are interrupted. Arguments are checked before any query (``ArgumentError``);
an experiment the store lacks is ``NotInStore``.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ArgumentError, NotInStore
from ..protocol import Direction, ExperimentState, TrialState
from ._base import QUEUED, ExperimentDefinition, TrialRecord, experiment_seconds
from ._catalog import list_experiments, state_of
from ._codec import definition_from_json, finite, trial_from_json
from ._detail import TRIALS_PAGE, detail_of, trial_summary
from ._sqlite import Database
from ._wire import ExperimentDetail, ExperimentList, TrialsPage

# The store's ids (``new_experiment_id``): anything else is refused before it reaches a query.
EXPERIMENT_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
MAX_PAGE = 10_000
# GET .../trials: best first (as the detail's first page) or by trial id; of one of these states, or all.
TRIAL_SORTS = ("best", "id")
TRIAL_STATES = {s.value for s in TrialState}
FAILED_STATES = {ExperimentState.FAILED.value, ExperimentState.INTERRUPTED.value}


def _check_id(experiment_id: str) -> None:
    if not EXPERIMENT_ID.match(experiment_id):
        raise ArgumentError(f"{experiment_id!r} is not an experiment id (like 20261123-141502-3f9a1c)")


def check_page(offset: int, limit: int) -> None:
    if offset < 0 or not 0 < limit <= MAX_PAGE:
        raise ArgumentError(f"offset >= 0 and 0 < limit <= {MAX_PAGE}")


class ExperimentReader:
    """The experiments of one store file (``path``; None: no store): the listing, a detail, pages of trials."""

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
        check_page(offset, limit)
        rows = list_experiments(self.path) if self.path else []
        rows.reverse()
        return {"experiments": finite(rows[offset : offset + limit]), "total": len(rows)}

    def detail(self, experiment_id: str) -> ExperimentDetail:
        """The experiment, its trials counted by state, its best and running trials and the first TRIALS_PAGE
        trials best first: the kernel's snapshot's shape (``detail_of``, as ``experiment_detail`` builds it), read
        with SQL on the store's columns, so a 100,000-trial run's answer is read and sent as fast as a small one's
        (no record of the others is parsed)."""
        with self._opened(experiment_id) as (db, row):
            definition = definition_from_json(row["definition"])
            state = state_of(row)
            live = state == ExperimentState.RUNNING.value
            ended = row["ended"] if row["ended"] is not None else row["heartbeat"]
            counts = dict(db.trial_summaries(experiment_id).get(experiment_id, {}))
            page = self._trials(db, definition, live, ended, 0, TRIALS_PAGE, best_first=True)
            running = (
                [
                    self._trial(text, live, ended)
                    for text in db.trial_records_of_state(experiment_id, "running")
                ]
                if counts.get("running")
                else []
            )
        if live:
            queued = sum(rec.queued for rec in running)
            if queued:
                counts[QUEUED] = queued
                counts["running"] -= queued
        elif counts.get("running"):  # its kernel is gone: the trials it left running are interrupted
            left = counts.pop("running")
            counts["interrupted"] = counts.get("interrupted", 0) + left
        # The best trial is the first of the page when one has completed with a value (best_first ranks it so).
        first = page[0] if page else None
        best = first if first is not None and first.state is TrialState.COMPLETED else None
        return detail_of(
            definition,
            state,
            started=definition.created,
            duration=experiment_seconds(definition.created, definition.details, ended),
            # As ExperimentRecord.error: a planned end's note (a target reached) is no error.
            error=row["error"] if state in FAILED_STATES else None,
            message=row["error"],
            counts=counts,
            best=best if best is not None and best.value is not None and math.isfinite(best.value) else None,
            running=running,
            page=page,
            about=json.loads(row["about"]),
        )

    def trials(
        self,
        experiment_id: str,
        offset: int = 0,
        limit: int = TRIALS_PAGE,
        sort: str = "best",
        state: str | None = None,
    ) -> TrialsPage:
        """A page of the trials: ``sort`` "best" (best first, as the detail's first page) or "id", of one ``state``
        (a trial state's name) or all; ``total``: how many there are of that state."""
        check_page(offset, limit)
        if sort not in TRIAL_SORTS:
            raise ArgumentError(f"sort={sort[:20]!r}: one of {', '.join(TRIAL_SORTS)}")
        if state is not None and state not in TRIAL_STATES:
            raise ArgumentError(f"state={state[:20]!r}: one of {', '.join(sorted(TRIAL_STATES))}")
        with self._opened(experiment_id) as (db, row):
            definition = definition_from_json(row["definition"])
            live = state_of(row) == ExperimentState.RUNNING.value
            ended = row["ended"] if row["ended"] is not None else row["heartbeat"]
            # A run whose kernel is gone has no running trial: the store's "running" ones are its interrupted.
            stored = state
            if not live and state == TrialState.INTERRUPTED.value:
                stored = None  # both; filtered below
            elif not live and state == TrialState.RUNNING.value:
                return {"trials": [], "offset": offset, "total": 0}
            if stored is None and state is not None:
                records = [
                    *db.trial_records_of_state(experiment_id, "interrupted"),
                    *db.trial_records_of_state(experiment_id, "running"),
                ]
                page = sorted(
                    (self._trial(text, live, ended) for text in records), key=lambda rec: rec.trial_id
                )
                total, page = len(page), page[offset : offset + limit]
            else:
                total = db.trial_count(experiment_id, state)
                page = self._trials(
                    db, definition, live, ended, offset, limit, best_first=sort == "best", state=state
                )
        objective = definition.objective
        return finite(
            {"trials": [trial_summary(rec, objective) for rec in page], "offset": offset, "total": total}
        )

    @staticmethod
    def _trial(text: str, live: bool, ended: float) -> TrialRecord:
        """A trial's stored record; one a run whose kernel is gone left running, interrupted (as ``record_of``)."""
        rec = trial_from_json(text)
        if not live:
            rec.interrupt(ended)
        return rec

    def _trials(
        self,
        db: Database,
        definition: ExperimentDefinition,
        live: bool,
        ended: float,
        offset: int,
        limit: int,
        *,
        best_first: bool,
        state: str | None = None,
    ) -> list[TrialRecord]:
        objective = definition.objective
        texts = db.ranked_trial_records(
            definition.id,
            offset,
            limit,
            # Nothing to optimise (a data-parallel run): by id, as best_first orders it.
            best_first=best_first and bool(objective.metric),
            maximize=objective.direction is Direction.MAX,
            live=live,
            state=state,
        )
        return [self._trial(text, live, ended) for text in texts]
