"""The magic's one-line help of arguments several kinds have, each its own (``metric=``, ``mode=``, ``seed=``):
the magic offers each once, so its help speaks for all of them."""

from __future__ import annotations

__all__ = ["METRIC_SHORT", "MODE_MAGIC", "MODE_SHORT", "SEED_SHORT"]

METRIC_SHORT = "the metric to optimise or compare, reported or returned by the function (required)"
MODE_SHORT = "max or min (default max)"
# MODE is the magic's first word (hpo, pbt, ablation, ddp): --mode's value is the objective's direction.
MODE_MAGIC = {"metavar": "DIRECTION"}
SEED_SHORT = "seeds the search and each trial's random, numpy and torch (default: drawn, see exp.seed); ablation: repeat 0's"
