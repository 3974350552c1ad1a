"""An experiment's tables, as ``Experiment`` hands them out (pandas DataFrames built from the record's trials and
reports), and the order views list trials in (``best_first``)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..protocol import Direction, Objective, TrialState
from ..store import TrialRecord

__all__ = [
    "best_first",
    "history_frame",
    "pareto_frame",
    "restarts_frame",
    "trials_frame",
    "utilization_frame",
]


def trials_frame(records: list[TrialRecord], objective: Objective | None = None):
    """One row per trial: trial_id, [labels...], state, value, [<metric>... with several objectives: each one's
    value, by its name], params_<name>..., duration, steps, attempts, seed, error_kind (why a failed trial
    failed: an ``ErrorKind`` value such as "memory"; None for the others), error."""
    import pandas as pd

    rows = []
    for rec in records:
        row = {"trial_id": rec.trial_id, **rec.labels, "state": rec.state.value, "value": rec.value}
        if objective is not None and objective.several:
            row.update(objective.by_metric(rec.value, rec.last))
        row.update({f"params_{k}": v for k, v in rec.params.items()})
        row.update(duration=rec.duration, steps=rec.steps, attempts=rec.attempts, seed=rec.seed)
        row.update(error_kind=str(rec.error_kind) if rec.error_kind else None, error=rec.error)
        rows.append(row)
    columns = ["trial_id", "state", "value", "duration", "steps", "attempts", "seed", "error_kind", "error"]
    frame = pd.DataFrame(rows, columns=None if rows else columns)
    # pandas would store a missing traceback (or kind) as NaN in a string column; the contract says None.
    for column in ("error_kind", "error"):
        frame[column] = pd.Series([r[column] for r in rows], dtype=object, index=frame.index)
    return frame


def history_frame(report_rows: Iterable[tuple]):
    """One row per reported metric: trial_id, attempt, step, metric, value, time (when it was reported)."""
    import pandas as pd

    frame = pd.DataFrame(
        list(report_rows), columns=["trial_id", "attempt", "step", "metric", "value", "time"]
    )
    frame["time"] = pd.to_datetime(frame["time"], unit="s")
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


def best_first(records: list[TrialRecord], objective: Objective) -> list[TrialRecord]:
    """Completed trials best first, then running ones (newest first), then the rest by id; by id when there
    is nothing to optimise (a data-parallel run)."""
    if objective.metric is None:
        return sorted(records, key=lambda r: r.trial_id)
    sign = -1.0 if objective.direction is Direction.MAX else 1.0

    def rank(r: TrialRecord) -> tuple:
        if r.state is TrialState.COMPLETED and r.value is not None and math.isfinite(r.value):
            return (0, sign * r.value, r.trial_id)
        if r.state is TrialState.RUNNING:
            return (1, -r.trial_id, 0)
        return (2, r.trial_id, 0)

    return sorted(records, key=rank)
