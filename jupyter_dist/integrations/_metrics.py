"""What the framework callbacks share: which logged metrics to report under which names, as plain floats, and
the error for a framework that is not installed."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from ..errors import ArgumentError

__all__ = ["MetricSelection", "as_float", "import_framework"]


def import_framework(module: str, install: str, what: str) -> ModuleType:
    """Import ``module`` or raise an ImportError that says how to install it (``install``: a pip argument)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what} needs {module!r}, which is not installed here: pip install {install}"
        ) from exc


def as_float(value: Any) -> float | None:
    """A logged value as a float, or None for what is not one number (a vector, a string, a flag)."""
    if hasattr(value, "numel"):  # a torch tensor: Lightning logs 0-d tensors
        if value.numel() != 1:
            return None
        value = value.detach().cpu().item()
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class MetricSelection:
    """The ``metrics=`` argument of a report callback: which logged values to report, under which names.

    Parameters
    ----------
    metrics
        None: every logged value that is a number (``keep`` decides which names count). A name, or a list of
        names: those, reported under their logged names. A dict ``{reported_name: logged_name}``: those,
        renamed (Ray Tune's convention).
    owner
        The callback's name, for error messages.
    """

    def __init__(self, metrics: str | Iterable[str] | Mapping[str, str] | None, owner: str) -> None:
        self.renames = isinstance(metrics, Mapping)
        self.names: dict[str, str] | None = _as_mapping(metrics, owner)

    def pick(
        self,
        logged: Mapping[str, Any],
        keep: Callable[[str], bool] = lambda name: True,
        lookup: Callable[[str, Mapping[str, Any]], str | None] = lambda name, logged: name,
    ) -> dict[str, float]:
        """The metrics to report from one set of logged values; names not logged this time are left out.

        ``keep`` filters the names when every metric is reported; ``lookup`` finds a picked name among the
        logged ones (Hugging Face's ``eval_`` prefix), returning None when it is not there.
        """
        if self.names is None:
            chosen = {name: name for name in logged if keep(name)}
        else:
            chosen = {}
            for reported, name in self.names.items():
                found = lookup(name, logged)
                if found is not None and found in logged:
                    chosen[reported if self.renames else found] = found
        values = {reported: as_float(logged[name]) for reported, name in chosen.items()}
        return {name: value for name, value in values.items() if value is not None}


def _as_mapping(metrics: Any, owner: str) -> dict[str, str] | None:
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        names = dict(metrics)
    elif isinstance(metrics, Iterable):
        names = {name: name for name in metrics}
    else:
        names = None
    fix = "give a name, a list of names, or a dict {reported_name: logged_name}"
    if names is None or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        raise ArgumentError(f"{owner}(metrics={metrics!r}): {fix}")
    if not names:
        raise ArgumentError(f"{owner}(metrics={metrics!r}) picks no metric: {fix}, or None for all of them")
    return names
