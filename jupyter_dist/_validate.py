"""Checks of the API's arguments, written once: each refuses bad input before any work starts, with a message
that names the argument, the value and the fix."""

from __future__ import annotations

from typing import Any

from .errors import ArgumentError


def check_callable(fn: Any) -> None:
    if not callable(fn):
        raise ArgumentError(f"the training function must be callable, got {type(fn).__name__} {fn!r:.60}")


def check_positive(name: str, value: Any, *, integer: bool = True, optional: bool = True) -> None:
    """``value`` must be a positive int (or, ``integer=False``, a positive number); None passes if optional."""
    if value is None and optional:
        return
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
        what = "a positive whole number" if integer else "a positive number"
        raise ArgumentError(f"{name}={value!r}: give {what}{', or None' if optional else ''}")


def check_metric(what: str, metric: Any, purpose: str) -> None:
    """``what()`` needs the name of the metric it is to ``purpose`` ("optimise", "compare")."""
    if not isinstance(metric, str) or not metric:
        raise ArgumentError(
            f"{what}() needs metric=..., the name of the metric to {purpose}: "
            "one that the training function reports with jupyter_dist.report(...) or returns"
        )
