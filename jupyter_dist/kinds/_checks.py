"""Checks of the options every kind shares that take more than a line, and the magic's ``--resources`` parser."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._validate import check_positive
from ..errors import ArgumentError

__all__ = ["check_runtime", "parse_resources"]


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
