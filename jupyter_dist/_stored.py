"""Stored experiments seen from the API: the listing, loading one back as its Experiment, and the record a
resumed run continues."""

from __future__ import annotations

from typing import Any

from .errors import ArgumentError, StoreError
from .experiment import Experiment
from .kinds import experiment_of
from .protocol import ExperimentState
from .store import InMemoryRecord, NotInStore, list_experiments, read_record, store_path

__all__ = ["experiments", "load", "prior_run"]


def experiments(store: Any = None):
    """Every experiment in the store, oldest first, as a DataFrame: name, id, kind, state, trials done and
    total, metric, mode, best, started, duration (seconds). A run whose kernel is gone shows "interrupted"."""
    import pandas as pd

    columns = ["name", "id", "kind", "state", "trials_done", "trials_total", "metric", "mode", "best"]
    path = store_path(store)
    rows = list_experiments(path) if path else []
    table = pd.DataFrame(rows, columns=[*columns, "started", "duration"])
    table["started"] = pd.to_datetime(table["started"], unit="s")
    return table


def load(name_or_id: str, store: Any = None) -> Experiment:
    """A stored experiment, by name or id, as the Experiment the run returned: ``.best``, ``.trials``,
    ``.history``, ``.logs()``, ``.plot()``, ``.summary()``; a data-parallel run's ``.result``
    (when it pickled). A name or id the store lacks raises ``jupyter_dist.NotInStore`` (also a LookupError)."""
    if not isinstance(name_or_id, str) or not name_or_id:
        raise ArgumentError(f"load() takes an experiment's name or id; got {name_or_id!r:.60}")
    path = store_path(store)
    if path is None:
        raise ArgumentError("load() needs a store: store=False (or JUPYTER_DIST_STORE=off) has none")
    record, about = read_record(path, name_or_id)
    exp = experiment_of(record)
    exp._about, exp._store = about, path  # what exp.reproduce compares with; where exp.extend records
    return exp


def prior_run(path: str | None, name: str | None, kind: str) -> InMemoryRecord:
    """The stored run ``name`` that ``resume=True`` continues, checked to be one of ``kind`` that no kernel runs
    (whether this call's arguments can continue it is for its kind to say: Kind.resume)."""
    if path is None:
        raise ArgumentError("resume=True continues a stored experiment: it needs a store (not store=False)")
    if not name:
        raise ArgumentError("resume=True needs name=: the stored experiment to continue")
    try:
        record, _about = read_record(path, name)
    except NotInStore:
        raise StoreError(
            f"there is no experiment named {name!r} to resume in {path}; leave out resume=True to start it"
        ) from None
    stored = record.definition
    if stored.kind != kind:
        raise ArgumentError(f"{name!r} is a stored {stored.kind} experiment: it cannot be resumed as {kind}")
    if record.state is ExperimentState.RUNNING:
        raise StoreError(
            f"{name!r} is still running in another kernel: stop it there before resuming it here"
        )
    return record
