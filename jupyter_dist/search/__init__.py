"""Search: sampler wiring and the ask/tell trial source for HPO. Optuna does the searching."""

from ._optuna_search import OptunaSearch
from ._pruners import PRUNERS, make_pruner
from ._samplers import SAMPLERS, grid_size, make_sampler

__all__ = ["OptunaSearch", "PRUNERS", "SAMPLERS", "grid_size", "make_pruner", "make_sampler"]
