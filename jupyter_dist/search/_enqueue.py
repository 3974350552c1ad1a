"""Known configurations run first (``hpo(enqueue=...)``: Optuna's ``enqueue_trial``, Ray's
``points_to_evaluate``), checked against the space before any work starts."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from ..errors import ArgumentError, SearchSpaceError
from ..space import Space, accepted_arguments, constants, is_space_function, searched
from ._define_by_run import DRY_RUNS, space_name, suggest
from ._quiet import quiet_optuna

__all__ = ["ENQUEUED", "check_enqueue", "check_value"]

# The label an enqueued configuration's trial carries (the configuration, as given): the trials table shows it,
# and a resumed run skips the configurations a stored trial carries.
ENQUEUED = "enqueued"


def _listed(enqueue: Any) -> list[Mapping[str, Any]]:
    if enqueue is None:
        return []
    if isinstance(enqueue, Mapping) or not isinstance(enqueue, (list, tuple)):
        raise ArgumentError(
            f"enqueue={enqueue!r:.80} is not a list of configurations: give [{{'lr': 1e-3}}, ...] "
            "(one dict of argument values per trial)"
        )
    for index, config in enumerate(enqueue):
        if not isinstance(config, Mapping) or not config:
            raise ArgumentError(
                f"enqueue[{index}]={config!r:.80}: each configuration is a non-empty dict of argument values"
            )
    return list(enqueue)


def check_enqueue(
    enqueue: Any, space: Any, fn: Callable | None, trials: int | None, sampler: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The enqueued configurations as given (the trials' labels) and as Optuna holds them (what is enqueued),
    or an ArgumentError naming the configuration's index, the argument and the value at fault. A function space
    is run on a throwaway study here (``dry_run``), with or without configurations."""
    configs = _listed(enqueue)
    if configs and sampler == "grid":
        raise ArgumentError(
            "enqueue= with sampler='grid': the grid runs every configuration of the space already; "
            "use another sampler, or leave out enqueue="
        )
    if trials is not None and len(configs) > trials:
        raise ArgumentError(
            f"enqueue= has {len(configs)} configurations but trials={trials}: they count towards trials; "
            f"give trials={len(configs)} or more"
        )
    if is_space_function(space):  # its dry run checks the function, with or without configurations
        checked = dry_run(space, fn, configs)
        return checked, checked
    spaces, fixed = searched(space), constants(space)
    as_optuna = []
    for index, config in enumerate(configs):
        values = {}
        for name, value in config.items():
            if name not in spaces:
                what = (
                    f"a constant of the space ({name}={fixed[name]!r})"
                    if name in fixed
                    else f"not in the search space (it searches {', '.join(spaces) or 'nothing'})"
                )
                raise ArgumentError(f"enqueue[{index}]: {name!r} is {what}; enqueue only searched arguments")
            values[name] = _optuna_value(index, name, value, spaces[name])
        as_optuna.append(values)
    return [dict(config) for config in configs], as_optuna


def dry_run(
    space_fn: Callable, fn: Callable | None, enqueue: list[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Run ``space_fn`` on a throwaway study before any work starts: DRY_RUNS random trials, then each enqueued
    configuration (which must name parameters its branch suggests, with values inside their ranges). Returns
    the enqueued configurations, checked."""
    import optuna

    accepted = accepted_arguments(fn) if fn is not None else None
    with quiet_optuna():
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        for _ in range(DRY_RUNS):
            trial = study.ask()
            suggest(space_fn, trial, fn, accepted)
            study.tell(trial, 0.0)
        for index, config in enumerate(enqueue):
            study.enqueue_trial(dict(config))
            trial = study.ask()
            with warnings.catch_warnings():
                # Optuna warns of a fixed value outside its range and uses it anyway: refused below instead.
                warnings.simplefilter("ignore")
                try:
                    suggest(space_fn, trial, fn, accepted)
                except SearchSpaceError as exc:  # e.g. a choice not among suggest_categorical's options
                    raise ArgumentError(f"enqueue[{index}]={dict(config)!r}: {exc}") from exc
            for key, value in config.items():
                distribution = trial.distributions.get(key)
                if distribution is None:
                    raise ArgumentError(
                        f"enqueue[{index}]: {key}={value!r}, but {space_name(space_fn)}(trial) suggests no {key!r} "
                        f"for this configuration (it suggested: {', '.join(trial.distributions) or 'nothing'})"
                    )
                check_value(index, key, value, distribution)
            study.tell(trial, 0.0)
    return [dict(config) for config in enqueue]


def _optuna_value(index: int, name: str, value: Any, space: Space) -> Any:
    try:
        optuna_value = space.to_optuna_value(value)
    except ValueError:
        raise ArgumentError(f"enqueue[{index}]: {name}={value!r} is not one of {space!r}") from None
    check_value(index, name, optuna_value, space.to_optuna(name), shown=space)
    return optuna_value


def check_value(index: int, name: str, value: Any, distribution: Any, shown: Any = None) -> None:
    """Refuse ``value`` for ``name`` outside Optuna's ``distribution`` (Optuna would warn and use it anyway)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    where = f"enqueue[{index}]: {name}={value!r}"
    if isinstance(distribution, CategoricalDistribution):
        # True == 1 in Python: a bool matches only a bool option
        if not any(
            value == option and isinstance(value, bool) == isinstance(option, bool)
            for option in distribution.choices
        ):
            raise ArgumentError(f"{where} is not one of {list(distribution.choices)!r}")
        return
    shown = shown if shown is not None else _describe(distribution)
    integer = isinstance(distribution, IntDistribution)
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise ArgumentError(f"{where} is not {'an int' if integer else 'a number'}, as {shown} needs")
    if not math.isfinite(value) or not distribution.low <= value <= distribution.high:
        raise ArgumentError(f"{where} is outside {shown}")
    step = distribution.step
    if step is not None and (Decimal(str(value)) - Decimal(str(distribution.low))) % Decimal(str(step)):
        raise ArgumentError(f"{where} is not on the steps of {shown} (low + a multiple of {step})")


def _describe(distribution: Any) -> str:
    from optuna.distributions import IntDistribution

    kind = "an int" if isinstance(distribution, IntDistribution) else "a float"
    extra = (f", step {distribution.step}" if distribution.step not in (None, 1) else "") + (
        ", log scale" if distribution.log else ""
    )
    return f"{kind} in [{distribution.low}, {distribution.high}]{extra}"
