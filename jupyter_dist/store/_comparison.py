"""Experiments side by side, from their records: the one place a comparison's rows and best-so-far lines are
computed, for ``jupyter_dist.compare`` in the kernel (_compare.py: a DataFrame and a plotly figure) and the REST
API (GET /jupyter-dist/api/compare: JSON that the Experiments panel draws). Below both, so the server needs no
Experiment to compare stored runs and the kernel and the panel cannot disagree about what is best when."""

from __future__ import annotations

from typing import Any

from ..protocol import Direction, TrialState
from ._codec import finite, plain
from ._record import ExperimentRecord
from ._wire import ComparedExperiment, ParamImportances

__all__ = ["SUMMARY_COLUMNS", "best_so_far", "compared_experiment", "summary_row"]

# Comparison.summary's columns, in its order; the panel's comparison table shows the same.
SUMMARY_COLUMNS = ["name", "kind", "state", "trials", "best_value", "best_params", "duration", "started"]


def summary_row(record: ExperimentRecord) -> dict[str, Any]:
    """The experiment's row of ``Comparison.summary`` (SUMMARY_COLUMNS), its values as the record holds them
    (parameters as the trial got them; ``started`` in seconds since the epoch). An experiment with no one best
    trial (nothing to optimise, several objectives, none completed) has None as its best value and parameters."""
    definition = record.definition
    objective = definition.objective
    best = record.best() if objective.metric and not objective.several else None
    return {
        "name": definition.name,
        "kind": str(definition.kind),
        "state": record.state.value,
        "trials": record.done(),
        "best_value": None if best is None else best.value,
        "best_params": None if best is None else dict(best.params),
        "duration": record.duration(),
        "started": record.started,
    }


def best_so_far(record: ExperimentRecord) -> tuple[list[float], list[float]]:
    """The experiment's best value of its (first) objective as its completed trials ended, in the order they
    ended: (seconds from its start, best value then) each; empty for a run with nothing to optimise."""
    objective = record.definition.objective
    if not objective.metric:
        return [], []
    done = [
        r
        for r in record.trial_records()
        if r.state is TrialState.COMPLETED and r.value is not None and r.duration is not None
    ]
    done.sort(key=lambda r: r.started + (r.duration or 0.0))
    pick = max if objective.direction is Direction.MAX else min
    ended: list[float] = []
    best: list[float] = []
    for rec in done:
        value = float(rec.value)  # type: ignore[arg-type]  # completed with a value (above)
        ended.append(rec.started + (rec.duration or 0.0) - record.started)
        best.append(value if not best else pick(best[-1], value))
    return ended, best


def compared_experiment(
    record: ExperimentRecord, importances: ParamImportances | None = None
) -> ComparedExperiment:
    """The experiment as a comparison's JSON has it (``ComparedExperiment``): its summary row, its objective, its
    best-so-far line and ``importances`` (an HPO run's, which the caller computes: the search is above the
    store), JSON-ready (non-finite numbers as None, parameters as JSON holds them)."""
    row = summary_row(record)
    objective = record.definition.objective
    ended, best = best_so_far(record)
    params = row["best_params"]
    compared: ComparedExperiment = {
        "id": record.definition.id,
        **row,  # type: ignore[typeddict-item]  # SUMMARY_COLUMNS, each a key of ComparedExperiment
        "best_params": None if params is None else {k: plain(v) for k, v in params.items()},
        "metric": objective.metric,
        "mode": objective.direction.value if objective.metric else None,
        "ended": ended,
        "best_so_far": best,
        "importances": importances,
    }
    return finite(compared)
