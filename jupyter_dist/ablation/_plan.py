"""Leave-one-component-out planning: which variants an ablation study runs, checked before any work starts.

A *component* is a feature (an entry of the function's ``features`` argument), a module (a dotted submodule name
that ``ablate(model)`` replaces by an identity) or a flag (a boolean argument set to False). A *group* leaves
several components out at once. Every variant runs ``repeats`` times; repeat r of every variant gets the same
seed, so the comparison with the baseline is paired.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import AblationError
from ..space import accepted_arguments

BASELINE = "baseline"
KINDS = ("feature", "module", "flag")


@dataclass(frozen=True)
class Variant:
    """One arm of the study: the baseline, or what it leaves out."""

    name: str  # "baseline", the component, or the group's name
    kind: str  # "baseline", "feature", "module", "flag" or "group"
    features: tuple[str, ...] = ()  # features left out
    modules: tuple[str, ...] = ()  # modules replaced by an identity
    flags: tuple[str, ...] = ()  # flags set to False


@dataclass(frozen=True)
class PlannedTrial:
    trial_id: int
    variant: Variant
    repeat: int
    params: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Plan:
    variants: tuple[Variant, ...]
    trials: tuple[PlannedTrial, ...]
    modules: tuple[str, ...]  # every module the study names: ablate() checks them all in every trial

    def removed_modules(self) -> dict[int, tuple[str, ...]]:
        return {t.trial_id: t.variant.modules for t in self.trials if t.variant.modules}


def _names(what: str, values: Sequence[str] | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise AblationError(f"{what}= takes a list of names, got {values!r}")
    for value in values:
        if not isinstance(value, str) or not value:
            raise AblationError(f"{what}=: {value!r} is not a name")
    duplicated = sorted({v for v in values if values.count(v) > 1})
    if duplicated:
        raise AblationError(f"{what}= names {', '.join(map(repr, duplicated))} more than once")
    return list(values)


def _check_flag(fn: Callable, name: str, accepted: set[str] | None) -> None:
    parameter = inspect.signature(fn).parameters.get(name)
    if parameter is None:
        if accepted is None:
            return  # **kwargs: it may well read the flag from there
        raise AblationError(
            f"flag {name!r}: {fn.__name__}() has no argument {name!r}; flags are boolean arguments it takes"
        )
    default = parameter.default
    if default is inspect.Parameter.empty:
        if parameter.annotation in (bool, "bool"):
            return
        raise AblationError(
            f"flag {name!r}: {fn.__name__}() argument {name!r} has no default; give it `{name}: bool` or "
            f"`{name}=True` so it is clearly a boolean flag"
        )
    if default is not True:
        problem = (
            "defaults to False, so leaving it out (False) changes nothing"
            if default is False
            else (f"defaults to {default!r}, not a boolean")
        )
        raise AblationError(
            f"flag {name!r}: {fn.__name__}() argument {name!r} {problem}; flags are boolean arguments that "
            "default to True"
        )


def plan_study(
    fn: Callable,
    *,
    features: Sequence[str] | None,
    modules: Sequence[str] | None,
    flags: Sequence[str] | None,
    groups: Mapping[str, Sequence[str]] | None,
    repeats: int,
    params: Mapping[str, Any] | None,
    seed: int,
) -> Plan:
    """Check the study against ``fn``'s signature and lay out its trials: every variant, ``repeats`` times."""
    features, modules, flags = (
        _names("features", features),
        _names("modules", modules),
        _names("flags", flags),
    )
    groups = dict(groups or {})
    if not (features or modules or flags or groups):
        raise AblationError(
            "an empty ablation study: give features=, modules=, flags= or groups= to leave out"
        )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise AblationError(f"repeats={repeats!r}: give a positive number of runs per variant")

    kind_of: dict[str, str] = {}
    for kind, names in zip(KINDS, (features, modules, flags), strict=True):
        for name in names:
            if name in kind_of:
                raise AblationError(
                    f"{name!r} is both a {kind_of[name]} and a {kind}; name each component once"
                )
            kind_of[name] = kind
    for name in modules:
        if name.startswith(".") or name.endswith(".") or ".." in name:
            raise AblationError(
                f"module {name!r}: give a dotted name as in model.named_modules(), e.g. 'encoder.0'"
            )

    accepted = accepted_arguments(fn)
    fixed = dict(params or {})
    if features and accepted is not None and "features" not in accepted:
        raise AblationError(
            f"features= needs a `features` argument: {fn.__name__}() takes "
            f"{', '.join(sorted(accepted)) or 'no keyword arguments'}. It receives the list of features to use"
        )
    for name in flags:
        _check_flag(fn, name, accepted)
    if accepted is not None:
        unknown = sorted(set(fixed) - accepted)
        if unknown:
            raise AblationError(f"params=: {fn.__name__}() has no argument {', '.join(map(repr, unknown))}")
    takes_seed = accepted is not None and "seed" in accepted
    if repeats > 1 and "seed" in fixed:
        raise AblationError("params= fixes seed, but repeats need a different seed each: leave seed out")

    variants = [Variant(BASELINE, BASELINE)]
    variants += [Variant(name, kind, **{f"{kind}s": (name,)}) for name, kind in kind_of.items()]
    for group, members in groups.items():
        if not isinstance(group, str) or not group:
            raise AblationError(f"groups=: {group!r} is not a name")
        if group in kind_of or group == BASELINE:
            raise AblationError(f"group {group!r} has the name of a component; name groups differently")
        members = _names(f"groups[{group!r}]", members)
        if len(members) < 2:
            raise AblationError(f"group {group!r} needs at least two components, got {members}")
        strangers = [m for m in members if m not in kind_of]
        if strangers:
            raise AblationError(
                f"group {group!r} names {', '.join(map(repr, strangers))}, which is not among the study's "
                f"features, modules or flags ({', '.join(kind_of)})"
            )
        variants.append(
            Variant(
                group,
                "group",
                **{f"{kind}s": tuple(m for m in members if kind_of[m] == kind) for kind in KINDS},
            )
        )
    same: dict[tuple[frozenset[str], frozenset[str], frozenset[str]], str] = {}
    for variant in variants[1:]:
        key = (frozenset(variant.features), frozenset(variant.modules), frozenset(variant.flags))
        if key in same:
            raise AblationError(f"{variant.name!r} leaves out the same components as {same[key]!r}")
        same[key] = variant.name

    trials: list[PlannedTrial] = []
    for repeat in range(repeats):  # repeat-major: a stopped study still has every variant as often as it can
        for variant in variants:
            kwargs = dict(fixed)
            if features:
                kwargs["features"] = [f for f in features if f not in variant.features]
            kwargs.update({flag: flag not in variant.flags for flag in flags})
            if takes_seed and "seed" not in fixed:
                kwargs["seed"] = seed + repeat
            trials.append(PlannedTrial(len(trials), variant, repeat, kwargs))
    return Plan(tuple(variants), tuple(trials), tuple(modules))
