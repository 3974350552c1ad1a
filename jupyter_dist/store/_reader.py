"""One store file as the server extension serves it: the listing, an experiment's detail, its reports after a
cursor, its learning curves thinned, its trials' utilisation samples after a cursor, a trial's output, the records
a comparison is computed from, and the one write a reader makes, a stop request (the run's own writer acts on it).
``StoreReader`` is built on ``ExperimentReader`` (_experiment_reader.py: the store opened for one experiment, the
listing, the detail, the pages of trials); the curves are assembled and thinned in _curves.py.

Every answer is a wire type (_wire.py), JSON-ready. Arguments are checked before any query: a malformed id or page
is an ``ArgumentError``, an experiment or trial the store lacks ``NotInStore``, a stop asked of an ended run
``NotRunning`` (the REST API answers 400, 404 and 409).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ArgumentError, NotInStore, NotRunning
from ..protocol import ExperimentState
from ._catalog import record_of, state_of
from ._codec import finite
from ._curves import CURVE_POINTS, MAX_CURVE_POINTS, TrialSet, assemble_curves, thinned, wanted_reports
from ._detail import TRIALS_PAGE
from ._experiment_reader import MAX_PAGE, TRIAL_SORTS, ExperimentReader, check_page
from ._memory import InMemoryRecord
from ._sqlite import Database
from ._utilization import COLUMNS as UTILIZATION_COLUMNS
from ._wire import CurvesPage, MetricsPage, TrialLogs, UtilizationPage

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

METRICS_COLUMNS = ["trial_id", "attempt", "step", "sent_at", "metrics"]
# The most experiments one comparison reads: each is read whole (and an HPO run's importances computed), and the
# panel's charts tell no more lines apart (ten colours, each a second time).
MAX_COMPARED = 20


class StoreReader(ExperimentReader):
    """The experiments of one store file (``path``; None: no store), read as the views show them."""

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
        check_page(since, limit)
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
        check_page(since, limit)
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
