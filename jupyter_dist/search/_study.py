"""An experiment's trials as a real Optuna study, built from its record (a live run's or one read from the store):
what ``optuna.visualization``, ``optuna.importance`` and optuna-dashboard (through ``optuna.copy_study``) read.

It reads the record only, so ``Experiment.study`` and the server can both use it.
"""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError
from ..protocol import ExperimentKind, TrialState
from ..space import Space, searched
from ..store import ExperimentRecord, ParamImportances, TrialRecord
from ._define_by_run import distributions_from_json

if TYPE_CHECKING:
    import optuna

__all__ = [
    "IMPORTANCE_EVALUATOR",
    "MIN_TRIALS_FOR_IMPORTANCE",
    "importances_report",
    "objective_curves",
    "param_importances",
    "study_of",
    "warm_start_trials",
]

# Fewer completed trials than this give importances that are noise (and PED-ANOVA, Optuna's default evaluator,
# compares the top 10% of them with the rest).
MIN_TRIALS_FOR_IMPORTANCE = 5
# What param_importances uses, named in the chart's title: Optuna's default evaluator, named here so the chart
# says which one even if Optuna's default changes.
IMPORTANCE_EVALUATOR = "PED-ANOVA"


def _states():
    import optuna

    return {
        TrialState.COMPLETED: optuna.trial.TrialState.COMPLETE,
        TrialState.PRUNED: optuna.trial.TrialState.PRUNED,
        # the user's Stop: Optuna has no such state, and our search told it so too
        TrialState.STOPPED: optuna.trial.TrialState.PRUNED,
        TrialState.FAILED: optuna.trial.TrialState.FAIL,
    }


def study_of(record: ExperimentRecord, intermediate_values: bool = True) -> optuna.Study:
    """A new in-memory ``optuna.Study`` holding every finished trial of the HPO experiment ``record``: its params
    and distributions, value, state (completed, pruned, failed; a stopped trial is pruned), the objective's
    intermediate values (its last attempt's reports; ``intermediate_values=False``: none, and no report is read),
    and user_attrs ``trial_id``, ``attempts``, ``duration``. Running and interrupted trials are left out."""
    import optuna

    definition = record.definition
    _check_searched(record)
    states = _states()
    finished = [rec for rec in record.trial_records() if rec.state in states]
    curves = objective_curves(record, finished) if intermediate_values else {}
    spaces = searched(definition.space)
    fixed = {name: space.to_optuna(name) for name, space in spaces.items()}
    from ._optuna_search import constraints_of
    from ._quiet import quiet_optuna

    with quiet_optuna():
        objective = definition.objective
        study = optuna.create_study(
            study_name=definition.name, directions=[d.optuna for d in objective.directions]
        )
        for rec in finished:
            if rec.distributions is not None:  # a define-by-run trial: its own distributions
                distributions = distributions_from_json(rec.distributions)
                params = {name: rec.params[name] for name in distributions}
            else:
                distributions = fixed
                params = {name: space.to_optuna_value(rec.params[name]) for name, space in spaces.items()}
            state = states[rec.state]
            values = (
                objective.values(rec.value, rec.last) if state is optuna.trial.TrialState.COMPLETE else None
            )
            if state is optuna.trial.TrialState.COMPLETE and (
                values is None or not all(math.isfinite(v) for v in values)
            ):
                state, values = optuna.trial.TrialState.FAIL, None  # as Optuna tells a NaN objective
            started = datetime.datetime.fromtimestamp(rec.started)
            frozen = optuna.trial.FrozenTrial(
                number=-1,  # add_trial numbers it
                trial_id=-1,
                state=state,
                value=None,
                values=values,
                datetime_start=started,
                datetime_complete=started + datetime.timedelta(seconds=rec.duration or 0.0),
                params=params,
                distributions=distributions,
                user_attrs={"trial_id": rec.trial_id, "attempts": rec.attempts, "duration": rec.duration},
                system_attrs={},
                # a multi-objective trial takes no intermediate values
                intermediate_values={} if objective.several else curves.get(rec.trial_id, {}),
            )
            for key, value in constraints_of(rec.constraints).items():
                frozen.set_constraint(key, value)  # hpo(constraints=): feasibility, as the search told it
            study.add_trial(frozen)
        if "warm_start" in definition.details:  # hpo(warm_start=): what its sampler was told first
            study.add_trials(warm_start_trials(definition.details["warm_start"], spaces))
    return study


def warm_start_trials(warm: dict[str, Any], spaces: dict[str, Space]) -> list[optuna.trial.FrozenTrial]:
    """The trials ``warm`` (_warm_start.py's) tells, as Optuna trials of the search space ``spaces``, each with
    user_attrs ``warm_start`` (its experiment) and ``trial_id`` (its id there)."""
    import optuna

    distributions = {name: space.to_optuna(name) for name, space in spaces.items()}
    trials = []
    for told in warm.get("trials", []):
        params = {name: value for name, value in told["params"].items() if name in distributions}
        completed = told["state"] == "completed"
        trials.append(
            optuna.trial.create_trial(
                params=params,
                distributions={name: distributions[name] for name in params},
                values=told["values"] if completed else None,
                state=optuna.trial.TrialState.COMPLETE if completed else optuna.trial.TrialState.PRUNED,
                intermediate_values={int(step): value for step, value in told["curve"]},
                user_attrs={"warm_start": told["experiment"], "trial_id": told["trial_id"]},
            )
        )
    return trials


def _check_searched(record: ExperimentRecord) -> None:
    definition = record.definition
    if definition.kind != ExperimentKind.HPO:
        raise ArgumentError(
            f"experiment {definition.name!r} is a {definition.kind} run: only an hpo experiment has an "
            "Optuna study (its trials' parameters were searched)"
        )


def objective_curves(record: ExperimentRecord, finished: list[TrialRecord]) -> dict[int, dict[int, float]]:
    """The ``finished`` trials' curves of the objective (trial id -> step -> value) in their last attempt, as the
    pruner was given them: each step's value the objective's scope over the reports up to it (Optuna keeps a
    step's first). A resumed search is told these, and the study holds them."""
    objective = record.definition.objective
    attempts = {rec.trial_id: rec.attempts - 1 for rec in finished}
    reports: dict[int, list[tuple[int, float]]] = {}
    for trial_id, attempt, step, metric, value, _ in record.report_rows():
        if metric == objective.metric and attempts.get(trial_id) == attempt:
            reports.setdefault(trial_id, []).append((step, value))
    curves: dict[int, dict[int, float]] = {}
    for trial_id, points in reports.items():
        curve = curves[trial_id] = {}
        for (step, _), value in zip(points, objective.scoped([v for _, v in points]), strict=True):
            curve.setdefault(step, value)
    return curves


def param_importances(record_or_study: ExperimentRecord | optuna.Study) -> dict[str, float] | None:
    """Each parameter's importance for the objective (PED-ANOVA, Optuna's default evaluator; they sum to 1),
    most important first; None with fewer than MIN_TRIALS_FOR_IMPORTANCE completed trials. Parameters that a
    define-by-run space did not suggest in every completed trial are left out (as Optuna does)."""
    import optuna

    if isinstance(record_or_study, optuna.Study):
        study = record_or_study
    else:  # importances read parameters and values only: no need to read every report
        study = study_of(record_or_study, intermediate_values=False)
    completed = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(completed) < MIN_TRIALS_FOR_IMPORTANCE:
        return None
    try:
        importances = optuna.importance.get_param_importances(
            study, evaluator=optuna.importance.PedAnovaImportanceEvaluator()
        )
    except (ValueError, RuntimeError):  # no parameter common to the trials, or every value the same
        return None
    return importances or None


def importances_report(record: ExperimentRecord) -> ParamImportances:
    """``param_importances`` as the views read it (the REST API's and the cell's saved bundle), JSON-ready."""
    _check_searched(record)
    completed = sum(rec.state is TrialState.COMPLETED for rec in record.trial_records())
    importances = param_importances(record) if completed >= MIN_TRIALS_FOR_IMPORTANCE else None
    return {
        "evaluator": IMPORTANCE_EVALUATOR,
        "completed": completed,
        "needed": MIN_TRIALS_FOR_IMPORTANCE,
        "importances": None if importances is None else {k: float(v) for k, v in importances.items()},
    }
