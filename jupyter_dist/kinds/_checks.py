"""Checks of the options every kind shares that take more than a line, and the magic's ``--resources`` parser."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._validate import check_positive
from ..errors import ArgumentError

__all__ = ["check_gpu_type", "check_gpus", "check_runtime", "parse_resources"]


def check_runtime(max_failures: Any, cpus_per_trial: Any, resources: Any) -> None:
    """Refuse a max_failures=, cpus_per_trial= or resources= that cannot work, naming it."""
    if max_failures is not None and (
        isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0
    ):
        raise ArgumentError(f"max_failures={max_failures!r}: give a whole number >= 0 (0: no retries)")
    check_positive("cpus_per_trial", cpus_per_trial)
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise ArgumentError(
            f"resources={resources!r}: give a dict of Dask worker resources per trial, e.g. {{'MEM': 4e9}}"
        )
    for name, amount in resources.items():
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"resources={dict(resources)!r}: {name!r} is not a resource name")
        ok = isinstance(amount, (int, float)) and not isinstance(amount, bool)
        if not ok or not math.isfinite(amount) or amount <= 0:
            raise ArgumentError(
                f"resources={{{name!r}: {amount!r}}}: give a positive amount of {name} (as the workers declare it, "
                f"dask worker --resources {name}=N)"
            )


def check_gpus(name: str, gpus: Any) -> None:
    """``gpus_per_trial``: a share of one GPU in (0, 1], or a whole number of them; None: no GPUs."""
    if gpus is None:
        return
    number = isinstance(gpus, (int, float)) and not isinstance(gpus, bool) and math.isfinite(gpus)
    if not number or gpus <= 0 or (gpus > 1 and not float(gpus).is_integer()):
        raise ArgumentError(
            f"{name}={gpus!r}: give a share of one GPU in (0, 1] (0.25: four trials on each GPU) or a whole "
            "number of GPUs (2); a trial never holds part of a second GPU"
        )


def check_gpu_type(gpu_type: Any) -> None:
    """``gpu_type``: a GPU type's name, or a list of them."""
    if gpu_type is None:
        return
    names = [gpu_type] if isinstance(gpu_type, str) else gpu_type
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) and n for n in names):
        raise ArgumentError(
            f'gpu_type={gpu_type!r}: give a GPU type\'s name ("H100") or a list of them (["H100", "A100"])'
        )


def parse_resources(text: str | None) -> dict[str, float] | None:
    """``--resources MEM=4e9,GPU=1`` as a dict; an ArgumentError naming a malformed entry."""
    if text is None:
        return None
    resources = {}
    for entry in text.split(","):
        name, sep, amount = entry.strip().partition("=")
        try:
            resources[name.strip()] = float(amount)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise ArgumentError(
                f"--resources {text}: {entry.strip()!r} is not NAME=AMOUNT; write e.g. --resources MEM=4e9,GPU=1"
            ) from None
    return resources
