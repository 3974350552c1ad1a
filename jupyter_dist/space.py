"""Search-space primitives and their validation.

A search space is a plain dict ``{argument_name: space_object}``; plain values are constants passed to every
trial. Everything here is checked before any work starts, and every message names the argument at fault.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SearchSpaceError

__all__ = ["Space", "uniform", "loguniform", "integer", "choice", "SearchSpaceError"]


class Space:
    """Base class of the space objects; ``isinstance(x, Space)`` tells a searched argument from a constant."""

    def to_optuna(self, name: str):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def from_optuna(self, value: Any) -> Any:
        """Map a value Optuna sampled back to the value the training function receives."""
        return value

    def to_optuna_value(self, value: Any) -> Any:
        """The inverse of ``from_optuna``: a value a trial received, as Optuna holds it (a resumed study)."""
        return value


def _check_number(name: str, what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SearchSpaceError(f"{name}: {what} must be a finite number, got {value!r}")
    return value


@dataclass(frozen=True)
class Uniform(Space):
    lo: float
    hi: float
    log: bool = False

    def validate(self, name: str) -> None:
        kind = "loguniform" if self.log else "uniform"
        _check_number(name, f"{kind} lo", self.lo)
        _check_number(name, f"{kind} hi", self.hi)
        if self.lo >= self.hi:
            raise SearchSpaceError(f"{name}: {kind}(lo={self.lo}, hi={self.hi}) needs lo < hi")
        if self.log and self.lo <= 0:
            raise SearchSpaceError(f"{name}: loguniform(lo={self.lo}, hi={self.hi}) needs lo > 0")

    def to_optuna(self, name: str):
        from optuna.distributions import FloatDistribution

        return FloatDistribution(float(self.lo), float(self.hi), log=self.log)

    def __repr__(self) -> str:
        return f"{'loguniform' if self.log else 'uniform'}({self.lo}, {self.hi})"


@dataclass(frozen=True)
class Integer(Space):
    lo: int
    hi: int

    def validate(self, name: str) -> None:
        for what, value in (("lo", self.lo), ("hi", self.hi)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SearchSpaceError(f"{name}: integer {what} must be an int, got {value!r}")
        if self.lo >= self.hi:
            raise SearchSpaceError(f"{name}: integer(lo={self.lo}, hi={self.hi}) needs lo < hi")

    def to_optuna(self, name: str):
        from optuna.distributions import IntDistribution

        return IntDistribution(self.lo, self.hi)

    def __repr__(self) -> str:
        return f"integer({self.lo}, {self.hi})"


_OPTUNA_CHOICE_TYPES = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class Choice(Space):
    options: tuple

    @property
    def _by_index(self) -> bool:
        # Optuna stores only None/bool/int/float/str; anything else (a class, a tuple) is searched by index.
        return not all(isinstance(o, _OPTUNA_CHOICE_TYPES) for o in self.options)

    def validate(self, name: str) -> None:
        if not self.options:
            raise SearchSpaceError(f"{name}: choice([]) is empty; give at least one option")

    def to_optuna(self, name: str):
        from optuna.distributions import CategoricalDistribution

        if self._by_index:
            return CategoricalDistribution(list(range(len(self.options))))
        return CategoricalDistribution(list(self.options))

    def from_optuna(self, value: Any) -> Any:
        return self.options[value] if self._by_index else value

    def to_optuna_value(self, value: Any) -> Any:
        if not self._by_index:
            return value
        # a stored trial holds such an option as its repr (the store keeps JSON)
        for index, option in enumerate(self.options):
            if option is value or option == value or repr(option) == value:
                return index
        raise ValueError(f"{value!r} is not one of {self!r}")

    def __repr__(self) -> str:
        return f"choice({list(self.options)!r})"


def uniform(lo: float, hi: float) -> Uniform:
    """A float drawn uniformly from ``[lo, hi]``."""
    return Uniform(lo, hi)


def loguniform(lo: float, hi: float) -> Uniform:
    """A float whose logarithm is uniform in ``[log lo, log hi]``; needs ``0 < lo < hi``."""
    return Uniform(lo, hi, log=True)


def integer(lo: int, hi: int) -> Integer:
    """An int in ``[lo, hi]``, both ends inclusive."""
    return Integer(lo, hi)


def choice(options: Sequence[Any]) -> Choice:
    """One of ``options``."""
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
        raise SearchSpaceError(f"choice() takes a list of options, got {options!r}")
    return Choice(tuple(options))


def validate_space(fn: Callable, space: Mapping[str, Any]) -> None:
    """Refuse a space that is malformed or names arguments ``fn`` does not accept."""
    if not isinstance(space, Mapping):
        raise SearchSpaceError(f"a search space is a dict {{argument: space}}, got {type(space).__name__}")
    accepted = accepted_arguments(fn)
    for name, value in space.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SearchSpaceError(f"{name!r}: search-space keys are argument names")
        if accepted is not None and name not in accepted:
            known = ", ".join(sorted(accepted)) or "none"
            raise SearchSpaceError(f"{name}: {fn.__name__}() has no argument {name!r} (it accepts: {known})")
        if isinstance(value, Space):
            value.validate(name)


def accepted_arguments(fn: Callable) -> set[str] | None:
    """Names ``fn`` takes by keyword, or None when it takes ``**kwargs`` (then any name goes)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in params if p.kind in keyword_kinds and p.name != "reporter"}


def searched(space: Mapping[str, Any]) -> dict[str, Space]:
    """The entries of ``space`` that are searched, not constant."""
    return {name: value for name, value in space.items() if isinstance(value, Space)}


def constants(space: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``space`` passed unchanged to every trial."""
    return {name: value for name, value in space.items() if not isinstance(value, Space)}
