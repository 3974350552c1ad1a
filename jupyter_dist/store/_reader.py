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
from ..protocol import ExperimentState
from ._catalog import list_experiments, record_of, state_of
from ._codec import finite
from ._detail import experiment_detail
from ._memory import InMemoryRecord
from ._sqlite import Database
from ._utilization import COLUMNS as UTILIZATION_COLUMNS
from ._wire import CurvesPage, ExperimentDetail, ExperimentList, MetricsPage, TrialLogs, UtilizationPage

__all__ = [
    "CURVE_POINTS",
    "MAX_COMPARED",
    "MAX_CURVE_POINTS",
    "MAX_PAGE",
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
        """The experiment and every trial, built as the kernel builds its snapshot (``experiment_detail``)."""
        with self._opened(experiment_id) as (db, row):
            assert self.path is not None  # _opened refuses a reader with no store
            record = record_of(db, row, self.path, results=False)
        return experiment_detail(record, json.loads(row["about"]))

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
        self, experiment_id: str, trials: str | None = None, points: int = CURVE_POINTS, since: int = 0
    ) -> CurvesPage:
        """The learning curves of the ``trials`` named (``TrialSet``: "3,17,40-59,9000-"; None: every trial),
        from their reports after cursor ``since`` (0: all of them), each thinned to at most ``points`` points
        (``thinned``), and the cursor to read on from: what a view needs to open an experiment of any size in one
        request, and then, asked again from the cursor, the new points of a running one (a few arrays per trial,
        where the metric pages would send an object per report)."""
        wanted = TrialSet(trials)
        if not 0 < points <= MAX_CURVE_POINTS:
            raise ArgumentError(f"points={points}: 0 < points <= {MAX_CURVE_POINTS}")
        if since < 0:
            raise ArgumentError(f"since={since}: a cursor (0 or more)")
        with self._opened(experiment_id) as (db, row):
            rows, cursor = wanted_reports(db, experiment_id, wanted, since)
        metric, curves = assemble_curves(rows, json.loads(row["definition"]).get("metric"))
        out = []
        for trial_id in sorted(curves):
            attempt, steps, values = curves[trial_id]
            out.append((trial_id, attempt, *thinned(steps, values, points)))
        # The wire type allows a null point (a NaN sent as JSON); every point here is finite (list is invariant).
        return {"metric": metric, "trials": out, "cursor": cursor}  # type: ignore[typeddict-item]

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
