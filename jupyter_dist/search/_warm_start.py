"""``hpo(warm_start=)``: the completed and pruned trials of earlier HPO experiments told to a new search's sampler,
without running them again.

Each earlier trial is read as its experiment's Optuna study holds it (``study_of``: a completed trial's value of
every objective, a pruned one's curve of the objective), then fitted to the new search space: parameters the new
space lacks are dropped, and a trial with a value outside the new space's range or choices is left out. What was
told is kept in the new experiment's definition (``details["warm_start"]``), so its ``exp.study`` holds those
trials too, loaded back or resumed.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ArgumentError
from ..protocol import ExperimentKind, Objective
from ..space import Space
from ..store import ExperimentRecord
from ._study import study_of

__all__ = ["warm_start", "warm_start_line"]


def warm_start(
    earlier: list[ExperimentRecord], searched: dict[str, Space], objective: Objective
) -> dict[str, Any]:
    """What ``earlier``'s trials tell a search of ``searched`` for ``objective`` (``details["warm_start"]``): the
    experiments' names (``from``), how many trials fell outside the space (``outside``), and each trial told
    (``trials``: experiment, trial_id, params as Optuna holds them, values, state, curve)."""
    import optuna

    distributions = {name: space.to_optuna(name) for name, space in searched.items()}
    told, outside = [], 0
    for record in earlier:
        _check(record, objective)
        for trial in study_of(record).trials:
            if trial.state not in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED):
                continue
            params = {name: value for name, value in trial.params.items() if name in distributions}
            if not all(_within(distributions[name], value) for name, value in params.items()):
                outside += 1
                continue
            told.append(
                {
                    "experiment": record.definition.name,
                    "trial_id": trial.user_attrs["trial_id"],
                    "params": params,
                    "values": trial.values,
                    "state": "completed" if trial.state is optuna.trial.TrialState.COMPLETE else "pruned",
                    # JSON keys are strings: a step's value, step by step
                    "curve": [[step, value] for step, value in sorted(trial.intermediate_values.items())],
                }
            )
    return {"from": [r.definition.name for r in earlier], "outside": outside, "trials": told}


def warm_start_line(warm: dict[str, Any]) -> str:
    """The line the views show: "warm start: 14 trials from 'a', 'b'; 2 outside the space"."""
    names = ", ".join(repr(name) for name in warm["from"])
    count = len(warm["trials"])
    line = f"warm start: {count} trial{'' if count == 1 else 's'} from {names}"
    return line + (f"; {warm['outside']} outside the space" if warm["outside"] else "")


def _check(record: ExperimentRecord, objective: Objective) -> None:
    definition = record.definition
    if definition.kind != ExperimentKind.HPO:
        raise ArgumentError(
            f"warm_start: {definition.name!r} is not an hpo experiment (its kind: {definition.kind}); a search is "
            "warm-started from hpo experiments (their trials were sampled from a search space)"
        )
    theirs = definition.objective
    if list(theirs.metrics) != list(objective.metrics) or list(theirs.directions) != list(
        objective.directions
    ):
        raise ArgumentError(
            f"warm_start: {definition.name!r} optimised {_said(theirs)}, this search {_said(objective)}: its "
            "values would mislead the sampler; warm-start from a search of the same objective"
        )


def _said(objective: Objective) -> str:
    return ", ".join(f"{m} ({d.value})" for m, d in zip(objective.metrics, objective.directions, strict=True))


def _within(distribution, value: Any) -> bool:
    """Whether a value an earlier trial had lies in the new space (its range, step and choices)."""
    try:
        internal = distribution.to_internal_repr(value)
    except (ValueError, TypeError):
        return False
    if isinstance(internal, float) and not math.isfinite(internal):
        return False
    return bool(distribution._contains(internal))
