"""What a ``%%distribute`` cell defined: its training function and search space, picked up after the cell ran."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from IPython.core.error import UsageError

from ..space import Space, accepted_arguments, is_space_function, takes_only_trial


def new_names(before: dict[str, int], namespace: dict[str, Any]) -> list[str]:
    """Names the cell bound or rebound, in the order it bound them."""
    return [k for k, v in namespace.items() if not k.startswith("_") and before.get(k) != id(v)]


def pick_space(named: str | None, namespace: dict[str, Any], new: list[str]) -> dict[str, Any] | Callable:
    """The search space: the dict or space function ``--space`` names, or the one the cell defines: a dict of
    space objects, or a function whose only parameter is ``trial`` (define-by-run)."""
    if named:
        space = namespace.get(named)
        if not isinstance(space, dict) and not is_space_function(space):
            raise UsageError(
                f"--space {named}: no dict or function space(trial) named {named!r} in the notebook"
            )
        return space
    spaces = [
        n
        for n in new
        if (isinstance(namespace[n], dict) and any(isinstance(v, Space) for v in namespace[n].values()))
        or takes_only_trial(namespace[n])
    ]
    if not spaces:
        raise UsageError(
            "the cell defines no search space: define a dict like {'lr': space.loguniform(1e-4, 1e-1)} "
            "or a function space(trial) calling trial.suggest_* in the cell, or name one with --space NAME"
        )
    if len(spaces) > 1:
        raise UsageError(
            f"the cell defines several search spaces ({', '.join(spaces)}); pick one with --space NAME"
        )
    return namespace[spaces[0]]


def pick_variable(option: str, named: str, namespace: dict[str, Any]) -> Any:
    """The value of the notebook variable an option names (``--enqueue known_good``)."""
    if named not in namespace:
        flag = "--" + option.replace("_", "-")
        raise UsageError(f"{flag} {named}: no variable named {named!r} in the notebook")
    return namespace[named]


def pick_function(
    named: str | None, namespace: dict[str, Any], new: list[str], needs: Iterable[str] | Callable
):
    """The training function: the one ``--fn`` names, or the one function the cell defines (among several, the
    one that takes every argument in ``needs``)."""
    if named:
        fn = namespace.get(named)
        if not callable(fn):
            raise UsageError(f"--fn {named}: no function named {named!r} in the notebook")
        return fn
    # Functions the cell defined, not ones it imported (`from jupyter_dist import report`).
    here = namespace.get("__name__", "__main__")
    functions = [
        n
        for n in new
        if inspect.isfunction(namespace[n])
        and namespace[n].__module__ == here
        and not takes_only_trial(namespace[n])  # the cell's space function, not a training function
    ]
    # A function the cell also wraps with its data (`bound = with_parameters(train, data=X)`) runs as the wrapper.
    for n in new:
        wrapped = getattr(namespace[n], "__wrapped__", None) if _binds_data(namespace[n]) else None
        for i, name in enumerate(functions):
            if namespace[name] is wrapped:
                functions[i] = n
    if not functions:
        raise UsageError(
            "the cell defines no training function: define it in the cell, or name it with --fn NAME"
        )
    if len(functions) > 1:
        # Helpers beside the training function are common: pick the one function that takes what it must. A
        # space function's names are known only as it runs: then there is nothing to go by.
        needs = set() if is_space_function(needs) else set(needs)
        fits = [n for n in functions if _accepts(namespace[n], needs)]
        if len(fits) != 1:
            raise UsageError(
                f"the cell defines several functions ({', '.join(functions)}); "
                "name the training function with --fn NAME"
            )
        functions = fits
    return namespace[functions[0]]


def _binds_data(obj) -> bool:
    from ..trials import WithParameters

    return isinstance(obj, WithParameters)


def _accepts(fn, needs: set[str]) -> bool:
    accepted = accepted_arguments(fn)
    return accepted is None or needs <= accepted
