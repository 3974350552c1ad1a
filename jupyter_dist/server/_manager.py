"""What the server extension serves, read from the experiment store, without HTTP (the handlers only translate).

Every answer is JSON-ready: non-finite numbers (a NaN loss) become null, since browsers' JSON has no NaN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..store import list_experiments
from ..store._codec import finite, trial_from_json, trial_summary
from ..store._sqlite import Database

# The store's ids (``new_experiment_id``): anything else is refused before it reaches a query.
EXPERIMENT_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
MAX_PAGE = 10_000


class NotFound(LookupError):
    """No such experiment (or trial) in the store."""


class BadRequest(ValueError):
    """A malformed id or paging argument."""


class NotRunning(RuntimeError):
    """A stop asked of an experiment that has already ended."""


def check_id(experiment_id: str) -> str:
    if not EXPERIMENT_ID.match(experiment_id):
        raise BadRequest(f"{experiment_id!r} is not an experiment id (like 20261123-141502-3f9a1c)")
    return experiment_id


def page_arguments(offset: Any, limit: Any, default_limit: int) -> tuple[int, int]:
    try:
        offset, limit = int(offset or 0), int(limit or default_limit)
    except (TypeError, ValueError):
        raise BadRequest("offset, limit, since: whole numbers") from None
    if offset < 0 or not 0 < limit <= MAX_PAGE:
        raise BadRequest(f"offset >= 0 and 0 < limit <= {MAX_PAGE}")
    return offset, limit


class ExperimentsManager:
    """The experiments of one store file, as the REST API shows them."""

    def __init__(self, store_path: str | None) -> None:
        self.store_path = store_path

    @contextmanager
    def _opened(self, experiment_id: str) -> Iterator[Database]:
        """The store, open, once ``experiment_id`` is known to be a valid id that it holds."""
        check_id(experiment_id)
        if not self.store_path or not Path(self.store_path).exists():
            raise NotFound("no experiment has been recorded yet")
        db = Database(self.store_path)
        try:
            if db.find(experiment_id) is None:
                raise NotFound(f"no experiment {experiment_id} in the store")
            yield db
        finally:
            db.close()

    def experiments(self, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        rows = list_experiments(self.store_path) if self.store_path else []
        rows.reverse()  # newest first
        return {"experiments": finite(rows[offset : offset + limit]), "total": len(rows)}

    def experiment(self, experiment_id: str) -> dict[str, Any]:
        with self._opened(experiment_id) as db:
            row = db.find(experiment_id)
            trials = [trial_from_json(r["record"]) for r in db.trial_rows(experiment_id)]
        (summary,) = list_experiments(self.store_path, experiment_id)
        definition = json.loads(row["definition"])
        best = None
        if summary["best"] is not None:
            best = next(
                (
                    {"trial_id": t.trial_id, "value": t.value, "params": t.params}
                    for t in trials
                    if t.state == "completed" and t.value == summary["best"]
                ),
                None,
            )
        return finite(
            {
                **summary,
                "error": row["error"],
                "definition": definition,
                "about": json.loads(row["about"]),
                "best": best,
                "trials": [trial_summary(t) for t in trials],
            }
        )

    def metrics(self, experiment_id: str, since: int = 0, limit: int = MAX_PAGE) -> dict[str, Any]:
        """Reports after cursor ``since`` (0: from the start), at most ``limit``; ``cursor`` for the next call."""
        with self._opened(experiment_id) as db:
            rows = db.conn.execute(
                "SELECT seq, trial_id, attempt, step, sent_at, metrics FROM reports "
                "WHERE experiment_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (experiment_id, since, limit + 1),
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "columns": ["trial_id", "attempt", "step", "sent_at", "metrics"],
            "rows": [
                finite([r["trial_id"], r["attempt"], r["step"], r["sent_at"], json.loads(r["metrics"])])
                for r in rows
            ],
            "cursor": rows[-1]["seq"] if rows else since,
            "more": more,
        }

    def request_stop(self, experiment_id: str) -> dict[str, Any]:
        """Ask the kernel running ``experiment_id`` to stop it: its store writer sees the request within a
        flush interval (0.5 s) and stops the run as the notebook's Stop would."""
        with self._opened(experiment_id) as db:
            (summary,) = list_experiments(self.store_path, experiment_id)
            if summary["state"] != "running":
                raise NotRunning(f"experiment {experiment_id} is not running ({summary['state']})")
            db.request_stop(experiment_id)
        return {"message": f"asked experiment {experiment_id} to stop"}

    def logs(self, experiment_id: str, trial_id: int) -> dict[str, Any]:
        with self._opened(experiment_id) as db:
            trial = db.conn.execute(
                "SELECT record FROM trials WHERE experiment_id = ? AND trial_id = ?",
                (experiment_id, trial_id),
            ).fetchone()
            if trial is None:
                raise NotFound(f"experiment {experiment_id} has no trial {trial_id}")
            lines = db.conn.execute(
                "SELECT stream, text FROM logs WHERE experiment_id = ? AND trial_id = ? ORDER BY seq",
                (experiment_id, trial_id),
            ).fetchall()
        error = json.loads(trial["record"]).get("error")
        return {
            "trial_id": trial_id,
            "stdout": "".join(r["text"] for r in lines if r["stream"] == "stdout"),
            "stderr": "".join(r["text"] for r in lines if r["stream"] == "stderr"),
            "error": error,
        }
