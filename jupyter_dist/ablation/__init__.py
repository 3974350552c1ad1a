"""Ablation studies: leave one feature, module or flag out at a time, and rank them by what it costs."""

from ..errors import AblationError
from ._ablate import AblationTrial, ablate
from ._plan import BASELINE, Plan, Variant, plan_study
from ._study import AblationExperiment, AblationSource

__all__ = [
    "BASELINE",
    "AblationError",
    "AblationExperiment",
    "AblationSource",
    "AblationTrial",
    "Plan",
    "Variant",
    "ablate",
    "plan_study",
]
