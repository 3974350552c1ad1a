"""Search: sampler wiring and the ask/tell trial source for HPO. Optuna does the searching."""

from ._optuna_search import OptunaSearch
from ._samplers import SAMPLERS, grid_size, make_sampler

__all__ = ["OptunaSearch", "SAMPLERS", "grid_size", "make_sampler"]
