"""Which store file, what it holds, and one experiment read back as a record.

The store's file: ``store=`` when given (a path; False for none), else the ``JUPYTER_DIST_STORE`` environment
variable (a path, or "off"), else dask config ``jupyter_dist.store``, else ``experiments.sqlite`` in
Jupyter's data directory (``jupyter --data-dir``/jupyter_dist).

A run still "running" in the store is shown as interrupted when its kernel is gone: on the same host, the
owning process (pid and start time) no longer runs; on another host, its heartbeat (written every
FLUSH_INTERVAL_S by the run's writer) is older than STALE_AFTER_S.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path
from typing import Any

from ..errors import ArgumentError, NotInStore
from ..protocol import ExperimentState, TrialState
from ._base import TrialRecord, experiment_seconds
from ._codec import definition_from_json, trial_from_fields
from ._memory import InMemoryRecord
from ._schema import owner_alive
from ._sqlite import Database
from ._wire import ExperimentSummary

STALE_AFTER_S = 30.0
RUNNING = TrialState.RUNNING.value


OFF = {"off", "false", "no", "0", ""}


def store_path(store: Any = None) -> str | None:
    """The store file for ``store=`` (None: the configured default; False: no store)."""
    if store is False:
        return None
    if store is None or store is True:
        import dask

        store = os.environ.get("JUPYTER_DIST_STORE")
        if store is None:
            store = dask.config.get("jupyter_dist.store", None)
        if store is None:
            from jupyter_core.paths import jupyter_data_dir

            return str(Path(jupyter_data_dir()) / "jupyter_dist" / "experiments.sqlite")
        if store is False or str(store).strip().lower() in OFF:
            return None
    if not isinstance(store, (str, os.PathLike)):
        raise ArgumentError(f"store= takes a file path, None (the default store) or False; got {store!r:.60}")
    return str(Path(store).expanduser())


def state_of(row) -> str:
    """A stored experiment's state: "interrupted" for a run still "running" in the store whose kernel is gone."""
    if row["state"] != ExperimentState.RUNNING.value:
        return row["state"]
    alive = owner_alive(row["owner_host"], row["owner_pid"], row["owner_started"])
    if alive is None:
        alive = time.time() - row["heartbeat"] < STALE_AFTER_S
    return row["state"] if alive else ExperimentState.INTERRUPTED.value


def list_experiments(path: str, experiment_id: str | None = None) -> list[ExperimentSummary]:
    """One row per stored experiment (or only ``experiment_id``'s), oldest first; from the store's counts, so a
    listing reads no trial's record."""
    if not Path(path).exists():
        return []
    db = Database(path)
    try:
        rows = db.experiment_rows(experiment_id)
        by_state = db.trial_summaries(experiment_id)
        value_range = db.completed_value_range(experiment_id)
    finally:
        db.close()
    out: list[ExperimentSummary] = []
    for row in rows:
        definition = json.loads(row["definition"])
        counts = by_state.get(row["id"], {})
        done = sum(n for state, n in counts.items() if TrialState(state).done)
        ended = row["ended"] if row["ended"] is not None else row["heartbeat"]
        details = definition.get("details") or {}
        out.append(
            {
                "name": row["name"],
                "id": row["id"],
                "kind": row["kind"],
                "state": state_of(row),
                "trials_done": done,
                "trials_total": definition.get("total"),
                "metric": definition.get("metric"),
                "mode": definition.get("mode"),
                "best": _best(definition, value_range.get(row["id"])),
                "started": row["created"],
                "duration": experiment_seconds(row["created"], details, ended),
            }
        )
    return out


def _best(definition: dict[str, Any], value_range: tuple[float, float] | None) -> float | None:
    if value_range is None or not definition.get("metric"):
        return None
    return value_range[1] if definition.get("mode") == "max" else value_range[0]


def read_record(path: str, name_or_id: str, results: bool = True) -> tuple[InMemoryRecord, dict[str, Any]]:
    """The stored experiment (by id, or by name) as a record, and its ``about``; ``results=False`` leaves out
    data-parallel trials' return values (unpickling them may import torch; their repr is in the record)."""
    if not Path(path).exists():
        raise NotInStore(f"no experiment store at {path}: nothing has been recorded there yet")
    db = Database(path)
    try:
        row = db.find(name_or_id)
        if row is None:
            raise NotInStore(
                f"no experiment named or with id {name_or_id!r} in {path}; jupyter_dist.experiments() lists them"
            )
        return record_of(db, row, path, results), json.loads(row["about"])
    finally:
        db.close()


def record_of(db: Database, row, path: str, results: bool = True) -> InMemoryRecord:
    """The experiment of ``row`` (read from ``db``, the store at ``path``) as a finished record; its reports and
    output are read from ``path`` when first asked for."""
    state = ExperimentState(state_of(row))
    ended = row["ended"] if row["ended"] is not None else row["heartbeat"]
    rows = db.trial_rows(row["id"], results)
    # Each trial's fields as stored, not a TrialRecord: the record keeps an ended trial as a row of columns, and
    # takes them a column at a time. One JSON array of them all: a parse each costs a third more.
    parsed: list[dict[str, Any]] = json.loads(f"[{','.join([r['record'] for r in rows])}]")
    trials: list[dict[str, Any] | TrialRecord] = []
    for fields, r in zip(parsed, rows, strict=True):
        if r["result"] is not None:
            stored = pickle.loads(r["result"])  # noqa: S301 - written by this user's own runs
            fields["result"], fields["rank_results"] = stored["result"], stored["rank_results"]
        if fields["state"] != RUNNING:
            trials.append(fields)
            continue
        rec = trial_from_fields(fields)  # a running trial stays a record
        rec.result, rec.rank_results = fields.get("result"), fields.get("rank_results")
        if state is not ExperimentState.RUNNING:
            rec.interrupt(ended)  # a trial it left running is interrupted
        trials.append(rec)
    experiment_id = row["id"]
    return InMemoryRecord.restored(
        definition_from_json(row["definition"]),
        trials,
        lambda: _details(path, experiment_id),
        state=state,
        message=row["error"],
        ended=ended,
        source=(path, experiment_id),
    )


def _details(path: str, experiment_id: str) -> tuple[list, list, list]:
    """A stored run's reports, output and utilisation samples, read through one connection (InMemoryRecord.restored
    says their shapes)."""
    db = Database(path)
    try:
        batches = [
            (trial_id, attempt, rows) for _, trial_id, attempt, rows in db.report_batches(experiment_id)
        ]
        output = [(r["trial_id"], r["stream"], r["text"]) for r in db.log_rows(experiment_id)]
        usage = [sample for _, sample in db.utilization(experiment_id)]
        return batches, output, usage
    finally:
        db.close()


__all__ = ["STALE_AFTER_S", "list_experiments", "read_record", "record_of", "state_of", "store_path"]
