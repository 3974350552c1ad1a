"""What a kind hands the run: ``TrialPlan``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..store import ExperimentDefinition
from ..trials import Elastic, TrialSource

__all__ = ["TrialPlan"]


@dataclass(frozen=True)
class TrialPlan:
    """What a kind runs: the experiment's definition, the training function as the workers run it (wrapped, for
    an ablation study's or a data-parallel trial), the source of its trials, and (``ranks``) whether every trial
    is a data-parallel job of that many rank tasks."""

    definition: ExperimentDefinition
    fn: Callable
    source: TrialSource
    ranks: int | None = None
    # Data-parallel trials that go on at another size when workers leave or come (trials/_elastic.py); None: a
    # job that loses a rank fails.
    elastic: Elastic | None = None
