"""What ``Experiment``'s result methods work out from its record: the best trial (``Best``), the Pareto front, a
trial's checkpoint and output, the trials table and the summary's order, the figure.

The bodies live here so that ``Experiment`` stays short enough to read as the one list of what an experiment
offers. Each function takes the Experiment (typed Any: the class imports this module) and calls its methods, so a
kind's overrides (``trial_records()``, ``status_line()``, ``trials``) still count; it reads the record, never
writes to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError, NoResultError
from ..protocol import ExperimentKind
from ..store import InMemoryRecord
from ._frames import best_first, pareto_frame, table_frame, trials_frame

__all__ = [
    "Best",
    "best_of",
    "checkpoint_of",
    "figure_of",
    "logs_of",
    "pareto_of",
    "summary_of",
    "trials_of",
]


@dataclass(frozen=True)
class Best:
    """The best completed trial: its ``trial_id``, its ``value`` of the objective and its ``params``."""

    trial_id: int
    value: float
    params: dict[str, Any]


def best_of(exp: Any) -> Best:
    """``exp.best``: the best completed trial so far (several objectives: refused, see ``pareto``)."""
    objective = exp.record.definition.objective
    if objective.several:
        raise ArgumentError(
            f"experiment {exp.name!r} optimises {len(objective.metrics)} objectives "
            f"({', '.join(map(str, objective.metrics))}): no one trial is best. exp.pareto has the trials no other beats "
            "in every objective (the Pareto front)"
        )
    rec = exp.record.best()
    if rec is None or rec.value is None:  # (the best trial is one with a value)
        raise NoResultError(f"experiment {exp.name!r} has no completed trial yet (state: {exp.state})")
    return Best(trial_id=rec.trial_id, value=rec.value, params=dict(rec.params))


def pareto_of(exp: Any):
    """``exp.pareto``: the Pareto front's DataFrame; refused for a search with one objective."""
    objective = exp.record.definition.objective
    if not objective.several:
        raise ArgumentError(
            f"experiment {exp.name!r} optimises one objective ({objective.metric!r}): exp.best is its best "
            "trial (exp.pareto is for metric=[...] with several)"
        )
    return pareto_frame(exp.trial_records(), objective)


def checkpoint_of(exp: Any, trial_id: int | None) -> str | None:
    """``exp.checkpoint(trial_id)``: the trial's newest checkpoint folder, by default the best trial's (or the one
    trial's)."""
    if trial_id is None:
        best = exp.record.best()
        if best is None and exp.record.trial_count() != 1:
            raise NoResultError(f"experiment {exp.name!r} has no completed trial yet: give a trial_id")
        trial_id = best.trial_id if best is not None else exp.trial_records()[0].trial_id
    try:
        return exp.record.trial_without_details(trial_id).checkpoint
    except KeyError:
        raise ArgumentError(f"experiment {exp.name!r} has no trial {trial_id!r}") from None


def logs_of(exp: Any, trial_id: int) -> str:
    """``exp.logs(trial_id)``: what the trial printed, and its traceback if it failed."""
    try:
        return exp.record.trial_logs(trial_id)
    except KeyError:
        raise ArgumentError(f"experiment {exp.name!r} has no trial {trial_id!r}") from None


def trials_of(exp: Any):
    """``exp.trials``: one row per trial. A live run's record hands its ended trials as columns (no record each);
    another record has only its records."""
    objective = exp.record.definition.objective
    if not isinstance(exp.record, InMemoryRecord):  # another record has only its records
        return trials_frame(exp.trial_records(), objective)
    running, ended = exp.record.trials_table()  # the ended trials as columns: no record each
    return table_frame(running, ended, objective)


def summary_of(exp: Any):
    """``exp.summary()``: ``exp.trials`` without the tracebacks, best first."""
    table = exp.trials.drop(columns=["error"])
    order = [r.trial_id for r in best_first(exp.trial_records(), exp.record.definition.objective)]
    if not len(table):
        return table
    return table.set_index("trial_id").loc[order].reset_index()


def figure_of(exp: Any):
    """``exp.plot()``: the experiment's plotly figure (several objectives: the Pareto front's)."""
    from ._plots import experiment_figure

    exp.record.load_details()  # the learning curves of a stored experiment
    if exp.record.definition.objective.several:
        from ._pareto import pareto_figure

        return pareto_figure(exp.record.definition, exp.trial_records(), exp.status_line())
    importances = None
    if exp.kind == ExperimentKind.HPO:
        from ..search import param_importances

        importances = param_importances(exp.record)
    return experiment_figure(
        exp.record.definition, exp.trial_records(), exp.status_line(), importances=importances
    )
