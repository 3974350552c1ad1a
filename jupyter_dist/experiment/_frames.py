"""An experiment's tables, as ``Experiment`` hands them out (pandas DataFrames built from the record's trials and
reports), and the order views list trials in (``best_first``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..protocol import Objective
from ..store import TrialRecord, best_first

HISTORY_COLUMNS = ["trial_id", "attempt", "step", "metric", "value", "time"]

__all__ = [
    "best_first",
    "history_frame",
    "pareto_frame",
    "restarts_frame",
    "table_frame",
    "trials_frame",
    "utilization_frame",
]


def trials_frame(records: list[TrialRecord], objective: Objective | None = None):
    """One row per trial: trial_id, [labels...], state, value, [<metric>... with several objectives: each one's
    value, by its name], params_<name>..., duration, steps, attempts, seed, error_kind (why a failed trial
    failed: an ``ErrorKind`` value such as "memory"; None for the others), error."""
    import pandas as pd

    rows = [_row(rec, objective) for rec in records]
    columns = ["trial_id", "state", "value", "duration", "steps", "attempts", "seed", "error_kind", "error"]
    frame = pd.DataFrame(rows, columns=None if rows else columns)
    # pandas would store a missing traceback (or kind) as NaN in a string column; the contract says None.
    for column in ("error_kind", "error"):
        frame[column] = pd.Series([r[column] for r in rows], dtype=object, index=frame.index)
    return frame


def _row(rec: TrialRecord, objective: Objective | None) -> dict[str, Any]:
    row = {"trial_id": rec.trial_id, **rec.labels, "state": rec.state.value, "value": rec.value}
    if objective is not None and objective.several:
        row.update(objective.by_metric(rec.value, rec.last))
    row.update({f"params_{k}": v for k, v in rec.params.items()})
    row.update(duration=rec.duration, steps=rec.steps, attempts=rec.attempts, seed=rec.seed)
    row.update(error_kind=str(rec.error_kind) if rec.error_kind else None, error=rec.error)
    return row


def table_frame(running: list[TrialRecord], columns: dict[str, Any], objective: Objective | None = None):
    """``trials_frame`` of a record's running trials (their records) and ended ones (their columns,
    ``InMemoryRecord.trials_table``): the same table, built a column at a time instead of a dict per trial
    (100,000 trials: 0.2 s, against 1.6 s)."""
    import pandas as pd

    if not len(columns["trial_id"]):
        return trials_frame(running, objective)
    sparse, n = columns["sparse"], len(columns["trial_id"])
    data: dict[str, Any] = {"trial_id": columns["trial_id"]}
    for name in dict.fromkeys(
        k for fields in sparse.values() if "labels" in fields for k in fields["labels"]
    ):
        labels = [math.nan] * n
        for i, fields in sparse.items():
            labels[i] = fields.get("labels", {}).get(name, math.nan)
        data[name] = labels
    data["state"], data["value"] = columns["state"], columns["value"]
    if objective is not None and objective.several:
        first, *others = (str(name) for name in objective.metrics)
        data[first] = columns["value"]
        for name in others:
            data[name] = columns["last"].get(name, [None] * n)
    for name, values in columns["params"].items():
        data[f"params_{name}"] = values
    for name in ("duration", "steps", "attempts", "seed"):
        data[name] = columns[name]
    kinds: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    for i, fields in sparse.items():
        kinds[i] = str(fields["error_kind"]) if fields.get("error_kind") else None
        errors[i] = fields.get("error")
    data["error_kind"], data["error"] = kinds, errors
    if running:
        data = _with_running(data, [_row(rec, objective) for rec in running])
    frame = pd.DataFrame(data)
    # As trials_frame: None, not NaN, where a trial has no error.
    for column in ("error_kind", "error"):
        frame[column] = pd.Series(data[column], dtype=object, index=frame.index)
    return frame


def _with_running(data: dict[str, Any], running: list[dict[str, Any]]) -> dict[str, Any]:
    """``data`` (the ended trials' columns) and ``running`` (the running trials' rows, as ``trials_frame`` makes
    them) as one set of columns by trial id, in ``trials_frame``'s order; Python values throughout, so pandas
    makes of them the column types it would make of the records."""
    import numpy as np

    order = list(data)
    for column in dict.fromkeys(k for row in running for k in row):
        if column not in data:  # a parameter or label only running trials have: where trials_frame puts it
            at = order.index("duration") if column.startswith("params_") else order.index("state")
            order.insert(at, column)
    n = len(data["trial_id"])
    ids = [*np.asarray(data["trial_id"]).tolist(), *(row["trial_id"] for row in running)]
    by_id = sorted(range(len(ids)), key=ids.__getitem__)
    merged = {}
    for column in order:
        ended = data.get(column)
        values = (
            [math.nan] * n if ended is None else ended.tolist() if hasattr(ended, "tolist") else list(ended)
        )
        values += [row.get(column, math.nan) for row in running]
        merged[column] = [values[i] for i in by_id]
    return merged


def history_frame(columns: Mapping[str, Any]):
    """One row per reported metric: trial_id, attempt, step, metric, value, time (when it was reported).
    ``columns``: the record's ``report_columns()`` (arrays by column name, ``time`` in seconds since the epoch;
    store/_report_columns.py)."""
    import pandas as pd

    frame = pd.DataFrame({name: columns[name] for name in HISTORY_COLUMNS})
    # datetime64[ns] when empty too (pandas makes no rows' seconds datetime64[s] or [us])
    frame["time"] = pd.to_datetime(frame["time"], unit="s").astype("datetime64[ns]")
    return frame


def utilization_frame(columns: dict[str, list]):
    """What each trial used, about once a second while it ran: trial_id, time, cpu_percent (of one core), rss_mb
    (its worker process's), gpu_util and gpu_mem_mb (NaN where NVML read no GPU of the trial)."""
    import pandas as pd

    frame = pd.DataFrame(columns)
    frame["time"] = pd.to_datetime(frame["time"], unit="s")
    return frame


def restarts_frame(records: list[TrialRecord]):
    """Each time an elastic data-parallel job started again at another size."""
    import pandas as pd

    columns = ["trial_id", "at", "why", "lost", "world_before", "world_after", "lost_at", "from_step"]
    columns += ["steps_redone", "message"]
    rows = [{"trial_id": rec.trial_id, **r} for rec in records for r in rec.restarts]
    frame = pd.DataFrame(rows, columns=columns)
    frame["at"] = pd.to_datetime(frame["at"], unit="s")
    return frame


def pareto_frame(records: list[TrialRecord], objective: Objective):
    """The Pareto front of several objectives: trial_id, values_<metric> per objective, params_<name>..., the
    first objective's best first."""
    import pandas as pd

    from ._pareto import front

    rows = [
        {
            "trial_id": rec.trial_id,
            **{f"values_{m}": v for m, v in zip(objective.metrics, vector, strict=True)},
            **{f"params_{k}": v for k, v in rec.params.items()},
        }
        for rec, vector in front(records, objective)
    ]
    columns = None if rows else ["trial_id", *(f"values_{m}" for m in objective.metrics)]
    return pd.DataFrame(rows, columns=columns)
