"""Tensors inside the structures batches and model outputs come in: tuples (namedtuples too), lists, dicts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def map_tensors(data: Any, fn: Callable, other: Callable = lambda value: value) -> Any:
    """``data`` with ``fn`` applied to every tensor in it, the containers rebuilt as their own types; a value that
    is neither a tensor nor a container goes to ``other`` (by default it is kept as it is)."""
    import torch

    if isinstance(data, torch.Tensor):
        return fn(data)
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple takes its fields one by one
        return type(data)(*(map_tensors(item, fn, other) for item in data))
    if isinstance(data, (list, tuple)):
        return type(data)(map_tensors(item, fn, other) for item in data)
    if isinstance(data, dict):
        return type(data)({key: map_tensors(value, fn, other) for key, value in data.items()})
    return other(data)
