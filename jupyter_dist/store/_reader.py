"""One store file as the server extension serves it: the listing, an experiment's detail, its reports after a
cursor, its learning curves thinned, its trials' utilisation samples after a cursor, a trial's output, the records
a comparison is computed from, and the one write a reader makes, a stop request (the run's own writer acts on it).

Every answer is a wire type (_wire.py), JSON-ready. Arguments are checked before any query: a malformed id or page
is an ``ArgumentError``, an experiment or trial the store lacks ``NotInStore``, a stop asked of an ended run
``NotRunning`` (the REST API answers 400, 404 and 409).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ArgumentError, NotInStore, NotRunning
from ..protocol import Direction, ExperimentState, TrialState
from ._base import QUEUED, ExperimentDefinition, TrialRecord, experiment_seconds
from ._catalog import list_experiments, record_of, state_of
from ._codec import definition_from_json, finite, trial_from_json
from ._detail import TRIALS_PAGE, detail_of, trial_summary
from ._memory import InMemoryRecord
from ._sqlite import Database
from ._utilization import COLUMNS as UTILIZATION_COLUMNS
from ._wire import (
    CurvesPage,
    ExperimentDetail,
    ExperimentList,
    MetricsPage,
    TrialLogs,
    TrialsPage,
    UtilizationPage,
)

__all__ = [
    "CURVE_POINTS",
    "MAX_COMPARED",
    "MAX_CURVE_POINTS",
    "MAX_PAGE",
    "TRIALS_PAGE",
    "TRIAL_SORTS",
    "StoreReader",
    "TrialSet",
    "thinned",
]

# The store's ids (``new_experiment_id``): anything else is refused before it reaches a query.
EXPERIMENT_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
MAX_PAGE = 10_000
METRICS_COLUMNS = ["trial_id", "attempt", "step", "sent_at", "metrics"]
# Points per learning curve: what the views ask for by default (a chart a thousand pixels wide), and the most a
# caller may ask for.
CURVE_POINTS = 200
MAX_CURVE_POINTS = 5_000
# "3,17,40-59,9000-": ids, ranges, and every id from one on (the trials that start after the caller looked).
# The most experiments one comparison reads: each is read whole (and an HPO run's importances computed), and the
# panel's charts tell no more lines apart (ten colours, each a second time).
MAX_COMPARED = 20
TRIAL_SPEC = re.compile(r"^\d+(-\d*)?(,\d+(-\d*)?)*$")
MAX_SPEC_CHARS = 50_000
# GET .../trials: best first (as the detail's first page) or by trial id; of one of these states, or all.
TRIAL_SORTS = ("best", "id")
TRIAL_STATES = {s.value for s in TrialState}
FAILED_STATES = {ExperimentState.FAILED.value, ExperimentState.INTERRUPTED.value}


def _check_id(experiment_id: str) -> None:
    if not EXPERIMENT_ID.match(experiment_id):
        raise ArgumentError(f"{experiment_id!r} is not an experiment id (like 20261123-141502-3f9a1c)")


def _check_page(offset: int, limit: int) -> None:
    if offset < 0 or not 0 < limit <= MAX_PAGE:
        raise ArgumentError(f"offset >= 0 and 0 < limit <= {MAX_PAGE}")


class TrialSet:
    """The trials a caller names, as the curves endpoint takes them: ``"3,17,40-59,9000-"`` (ids, inclusive
    ranges, and every trial from an id on); None: every trial."""

    def __init__(self, spec: str | None) -> None:
        self.everything = spec is None
        self.ids: set[int] = set()
        self.ranges: list[tuple[int, float]] = []
        if spec is None:
            return
        if len(spec) > MAX_SPEC_CHARS or not TRIAL_SPEC.match(spec):
            raise ArgumentError(
                f"trials={spec[:80]!r}: trial ids, ranges and open ranges separated by commas, like 3,17,40-59,9000-"
            )
        for part in spec.split(","):
            low, dash, high = part.partition("-")
            if not dash:
                self.ids.add(int(low))
            else:
                self.ranges.append((int(low), int(high) if high else math.inf))

    def __contains__(self, trial_id: int) -> bool:
        return (
            self.everything
            or trial_id in self.ids
            or any(low <= trial_id <= high for low, high in self.ranges)
        )


def thinned(steps: list[int], values: list[float], points: int) -> tuple[list[int], list[float]]:
    """A curve cut to at most ``points`` points spread evenly over it, its first and latest always kept."""
    n = len(steps)
    if n <= points:
        return steps, values
    if points == 1:
        return steps[-1:], values[-1:]
    kept = [round(i * (n - 1) / (points - 1)) for i in range(points)]
    return [steps[i] for i in kept], [values[i] for i in kept]


def wanted_reports(
    db: Database, experiment_id: str, wanted: TrialSet, since: int = 0
) -> tuple[list[tuple], int]:
    """The reports of the ``wanted`` trials after cursor ``since``, in arrival order, (trial_id, attempt, step,
    metrics), and the cursor of the experiment's last report (``since`` when there is none after it).

    The one place the curves read reports: the wanted trials' batches (Database.trial_report_batches, one decode
    per chunk of 1,000 reports, the others dropped), expanded into rows. 1M reports: ~0.5 s of CPU, against ~4 s
    through report_page's row per report."""
    # A TrialSet holds ints only (its __contains__ takes an int, where Container's takes any object).
    batches, cursor = db.trial_report_batches(experiment_id, wanted, since)  # type: ignore[arg-type]
    rows = [
        (trial_id, attempt, step, metrics)
        for _, trial_id, attempt, reports in batches
        for step, metrics, _ in reports
    ]
    return rows, cursor


def assemble_curves(
    rows: list[tuple], metric: str | None
) -> tuple[str | None, dict[int, tuple[int, list[int], list[float]]]]:
    """Each trial's learning curve of ``metric`` (None: the first one reported) from its reports in arrival order,
    as the views assemble them (labextension/src/curves.ts): a later attempt's points replace the earlier
    attempt's from its first step on (an attempt resumed from a checkpoint continues the curve; one started over
    replaces it); a point with no finite value is left out."""
    curves: dict[int, tuple[int, list[int], list[float]]] = {}
    for trial_id, attempt, step, metrics in rows:
        if metric is None:
            metric = next(iter(metrics), None)
        value = metrics.get(metric)
        if value is None or not math.isfinite(value):
            continue
        curve = curves.get(trial_id)
        if curve is None or attempt > curve[0]:
            steps, values = curve[1:] if curve else ([], [])
            kept = next((i for i, s in enumerate(steps) if s >= step), len(steps))
            curve = curves[trial_id] = (attempt, steps[:kept], values[:kept])
        elif attempt < curve[0]:
            continue  # a late report of an attempt that was replaced
        curve[1].append(step)
        curve[2].append(value)
    return metric, curves


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
        _check_page(offset, limit)
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

    def record(self, experiment_id: str) -> InMemoryRecord:
        """The experiment as a record read back (its reports read when first asked for), for what the server
        computes from it (parameter importances)."""
        with self._opened(experiment_id) as (db, row):
            assert self.path is not None  # _opened refuses a reader with no store
            return record_of(db, row, self.path, results=False)

    def records(self, names_or_ids: list[str]) -> list[InMemoryRecord]:
        """The experiments named, each by its name or id, in that order, as records read back (their reports read
        when first asked for): what a comparison is computed from. The ones the store lacks are one
        ``NotInStore`` naming them all."""
        if not 0 < len(names_or_ids) <= MAX_COMPARED or not all(names_or_ids):
            raise ArgumentError(
                f"experiments={','.join(names_or_ids)[:80]!r}: 1 to {MAX_COMPARED} experiment names or ids, "
                "separated by commas"
            )
        if not self.path or not Path(self.path).exists():
            raise NotInStore("no experiment has been recorded yet")
        db = Database(self.path)
        try:
            rows = {name: db.find(name) for name in names_or_ids}
            missing = [name for name, row in rows.items() if row is None]
            if missing:
                listed = ", ".join(repr(name) for name in missing)
                raise NotInStore(f"no experiment named or with id {listed} in the store")
            return [record_of(db, rows[name], self.path, results=False) for name in names_or_ids]
        finally:
            db.close()

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

    def curves(
        self,
        experiment_id: str,
        trials: str | None = None,
        points: int = CURVE_POINTS,
        since: int = 0,
        limit: int = MAX_PAGE,
    ) -> CurvesPage:
        """The learning curves of the ``trials`` named (``TrialSet``: "3,17,40-59,9000-"; None: every trial),
        from their reports after cursor ``since`` (0: all of them), each thinned to at most ``points`` points
        (``thinned``), and the cursor to read on from: what a view needs to open an experiment of any size in one
        request, and then, asked again from the cursor, the new points of a running one (a few arrays per trial,
        where the metric pages would send an object per report). At most ``limit`` trials, the lowest ids; ``more``
        says others were left out (ask for ``trials=<last + 1>-`` with the same ``since`` for the next page)."""
        wanted = TrialSet(trials)
        if not 0 < points <= MAX_CURVE_POINTS:
            raise ArgumentError(f"points={points}: 0 < points <= {MAX_CURVE_POINTS}")
        if since < 0:
            raise ArgumentError(f"since={since}: a cursor (0 or more)")
        if not 0 < limit <= MAX_PAGE:
            raise ArgumentError(f"limit={limit}: 0 < limit <= {MAX_PAGE} trials")
        with self._opened(experiment_id) as (db, row):
            rows, cursor = wanted_reports(db, experiment_id, wanted, since)
        metric, curves = assemble_curves(rows, json.loads(row["definition"]).get("metric"))
        out = []
        ids = sorted(curves)
        for trial_id in ids[:limit]:
            attempt, steps, values = curves[trial_id]
            out.append((trial_id, attempt, *thinned(steps, values, points)))
        # The wire type allows a null point (a NaN sent as JSON); every point here is finite (list is invariant).
        return {"metric": metric, "trials": out, "cursor": cursor, "more": len(ids) > limit}  # type: ignore[typeddict-item]

    def utilization(
        self, experiment_id: str, trial_id: int | None = None, since: int = 0, limit: int = MAX_PAGE
    ) -> UtilizationPage:
        """Utilisation samples (of every trial, or of ``trial_id``) after cursor ``since`` (0: from the start), at
        most ``limit``; ``cursor`` for the next call."""
        _check_page(since, limit)
        with self._opened(experiment_id) as (db, _):
            rows = db.utilization(experiment_id, since, trial_id, limit + 1)
        page = rows[:limit]
        return {
            "columns": list(UTILIZATION_COLUMNS),
            "rows": [finite(list(sample)) for _, sample in page],
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
