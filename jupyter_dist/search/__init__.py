"""Search: sampler wiring, the ask/tell trial source for HPO, and an experiment's trials as an Optuna study
(Optuna does the searching); population-based training's trial source and its explore step."""

from ._optuna_search import DEFAULT_PRUNER, OptunaSearch
from ._pareto import hypervolume, minimised, non_dominated, ranks
from ._pruners import PRUNERS, make_pruner
from ._samplers import SAMPLERS, grid_size, make_sampler
from ._study import (
    IMPORTANCE_EVALUATOR,
    MIN_TRIALS_FOR_IMPORTANCE,
    importances_report,
    objective_curves,
    param_importances,
    study_of,
    warm_start_trials,
)
from ._warm_start import warm_start, warm_start_line

__all__ = [
    "DEFAULT_PRUNER",
    "IMPORTANCE_EVALUATOR",
    "MIN_TRIALS_FOR_IMPORTANCE",
    "OptunaSearch",
    "PRUNERS",
    "SAMPLERS",
    "grid_size",
    "hypervolume",
    "importances_report",
    "make_pruner",
    "make_sampler",
    "minimised",
    "non_dominated",
    "objective_curves",
    "param_importances",
    "ranks",
    "study_of",
    "warm_start",
    "warm_start_line",
    "warm_start_trials",
]
