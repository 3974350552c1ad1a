"""The trial source of a data-parallel run, and the checks of its arguments that only it needs."""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ..protocol import Outcome, ReportRow, derive_seed
from ..trials import TrialSpec
from ._fsdp import check_strategy
from ._precision import check_mixed_precision

BACKENDS = ("gloo", "nccl")


class SingleRun:
    """One trial: the function's arguments as given; each rank seeded from ``seed`` (protocol/_seeds.py)."""

    prunes = False

    def __init__(self, kwargs: dict[str, Any], seed: int | None = None) -> None:
        self.kwargs = kwargs
        self.seed = seed
        self.given = False

    def next_trial(self) -> TrialSpec | None:
        if self.given:
            return None
        self.given = True
        return TrialSpec(0, dict(self.kwargs), seed=None if self.seed is None else derive_seed(self.seed, 0))

    def remaining(self) -> int:
        return 0 if self.given else 1

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        pass


def check_data_parallel(
    gpus_per_worker: Any, backend: Any, strategy: Any = None, mixed_precision: Any = None
) -> None:
    """Refuse a device, backend, strategy or precision that cannot work, before anything starts."""
    check_strategy(strategy)
    check_mixed_precision(mixed_precision)
    if (
        isinstance(gpus_per_worker, bool)
        or not isinstance(gpus_per_worker, (int, float))
        or gpus_per_worker < 0
    ):
        raise ArgumentError(f"gpus_per_worker={gpus_per_worker!r}: give 0 (CPU) or the GPUs each rank needs")
    if backend is not None and backend not in BACKENDS:
        raise ArgumentError(
            f"backend={backend!r}: use 'gloo', 'nccl', or None (NCCL with GPUs, gloo without)"
        )
    if backend == "nccl" and not gpus_per_worker:
        raise ArgumentError("backend='nccl' runs on GPUs: give gpus_per_worker=1 (or more)")
