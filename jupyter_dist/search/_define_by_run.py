"""Define-by-run search spaces (Optuna's idiom): ``space(trial)`` calls ``trial.suggest_*``, conditionally, and
may return a dict of further arguments. A trial's arguments are exactly what it suggested plus that dict: a
parameter its branch did not suggest is absent, not None.

Checked before any work starts by running it on a throwaway study (``_enqueue.dry_run``), and again at every trial, since
a branch the dry runs did not take may suggest a name the training function does not accept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import SearchSpaceError
from ..space import check_argument

__all__ = ["DRY_RUNS", "distributions_from_json", "distributions_to_json", "space_name", "suggest"]

# Trials the dry run asks of a random sampler: enough to take most branches of a space function (each branch of
# a two-way choice is missed by all 8 with probability 1/256), cheap since nothing trains.
DRY_RUNS = 8


def space_name(space_fn: Callable) -> str:
    return getattr(space_fn, "__name__", type(space_fn).__name__)


def suggest(space_fn: Callable, trial: Any, fn: Callable | None, accepted: set[str] | None) -> dict[str, Any]:
    """The arguments of the trial ``space_fn`` defines on Optuna's ``trial``: the suggested parameters, then the
    dict it returned; a SearchSpaceError that names the space function for anything ``fn`` cannot take."""
    name = space_name(space_fn)
    try:
        extra = space_fn(trial)
    except Exception as exc:
        raise SearchSpaceError(
            f"search_space: {name}(trial) raised {type(exc).__name__}: {exc} (the traceback above is from "
            f"{name}; it must run for any trial Optuna asks for)"
        ) from exc
    if extra is None:
        extra = {}
    if not isinstance(extra, Mapping):
        raise SearchSpaceError(
            f"search_space: {name}(trial) returned a {type(extra).__name__}; it returns None or a dict of "
            "further arguments (constants, or values derived from the suggested ones)"
        )
    arguments = dict(trial.params)
    for key, value in extra.items():
        if key in arguments and arguments[key] != value:
            raise SearchSpaceError(
                f"{key}: {name}(trial) suggests {key}={arguments[key]!r} and returns {key}={value!r}; "
                "return derived values under names of their own"
            )
        arguments[key] = value
    for key in arguments:
        check_argument(fn, key, accepted)
    return arguments


def distributions_to_json(distributions: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's Optuna distributions as the store keeps them (Optuna's own JSON form, as a dict)."""
    from optuna.distributions import distribution_to_json

    return {name: json.loads(distribution_to_json(d)) for name, d in distributions.items()}


def distributions_from_json(stored: Mapping[str, Any]) -> dict[str, Any]:
    from optuna.distributions import json_to_distribution

    return {name: json_to_distribution(json.dumps(d)) for name, d in stored.items()}
