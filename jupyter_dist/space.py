"""Search-space primitives and their validation.

A search space is a plain dict ``{argument_name: space_object}``; plain values are constants passed to every
trial. Or it is a function ``space(trial)`` (Optuna's define-by-run idiom, for conditional parameters), which
search/ runs and checks, since it needs Optuna. Everything here is checked before any work starts, and every
message names the argument at fault.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing's own from Python 3.13; the annotation is never evaluated
    from typing_extensions import TypeIs

from .errors import SearchSpaceError

__all__ = ["Space", "uniform", "loguniform", "integer", "choice", "SearchSpaceError"]


class Space:
    """Base class of the space objects; ``isinstance(x, Space)`` tells a searched argument from a constant."""

    def to_optuna(self, name: str):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def validate(self, name: str) -> None:  # pragma: no cover - every subclass defines it
        """Refuse a malformed space object, naming the argument ``name`` it is for."""
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


def _off_the_steps(lo: float, hi: float, step: float) -> Decimal | None:
    """How far ``hi`` lies past the last multiple of ``step`` above ``lo`` (None when it lies on one).

    In decimal, as Optuna checks it (``str`` of each number): ``uniform(0.1, 0.7, step=0.2)`` is on its steps
    although 0.7 - 0.1 is 0.59999... in binary floating point."""
    rest = (Decimal(str(hi)) - Decimal(str(lo))) % Decimal(str(step))
    return rest or None


def _step_error(name: str, what: str, lo: float, hi: float, step: float, rest: Decimal) -> SearchSpaceError:
    below = Decimal(str(hi)) - rest
    above = below + Decimal(str(step))
    return SearchSpaceError(
        f"{name}: {what}: hi - lo = {Decimal(str(hi)) - Decimal(str(lo))} is not a multiple of step={step}; "
        f"use hi={below} or hi={above} (Optuna would quietly move hi to {below})"
    )


@dataclass(frozen=True)
class Uniform(Space):
    lo: float
    hi: float
    log: bool = False
    step: float | None = None  # quantised: lo, lo + step, ..., hi (Optuna's FloatDistribution(step=))

    def validate(self, name: str) -> None:
        kind = "loguniform" if self.log else "uniform"
        _check_number(name, f"{kind} lo", self.lo)
        _check_number(name, f"{kind} hi", self.hi)
        if self.lo >= self.hi:
            raise SearchSpaceError(f"{name}: {kind}(lo={self.lo}, hi={self.hi}) needs lo < hi")
        if self.log and self.lo <= 0:
            raise SearchSpaceError(f"{name}: loguniform(lo={self.lo}, hi={self.hi}) needs lo > 0")
        if self.step is None:
            return
        if self.log:
            raise SearchSpaceError(
                f"{name}: a log-scale float takes no step (Optuna samples it continuously); "
                "drop step= or use uniform(lo, hi, step=...)"
            )
        _check_number(name, "uniform step", self.step)
        if self.step <= 0:
            raise SearchSpaceError(f"{name}: {self!r} needs step > 0")
        rest = _off_the_steps(self.lo, self.hi, self.step)
        if rest is not None:
            raise _step_error(name, repr(self), self.lo, self.hi, self.step, rest)

    def to_optuna(self, name: str):
        from optuna.distributions import FloatDistribution

        step = None if self.step is None else float(self.step)
        return FloatDistribution(float(self.lo), float(self.hi), log=self.log, step=step)

    def __repr__(self) -> str:
        step = "" if self.step is None else f", step={self.step}"
        return f"{'loguniform' if self.log else 'uniform'}({self.lo}, {self.hi}{step})"


@dataclass(frozen=True)
class Integer(Space):
    lo: int
    hi: int
    step: int = 1
    log: bool = False  # sampled on a log scale (layer widths, batch sizes): needs lo > 0 and step 1

    def validate(self, name: str) -> None:
        for what, value in (("lo", self.lo), ("hi", self.hi), ("step", self.step)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SearchSpaceError(f"{name}: integer {what} must be an int, got {value!r}")
        if self.lo >= self.hi:
            raise SearchSpaceError(f"{name}: integer(lo={self.lo}, hi={self.hi}) needs lo < hi")
        if self.step <= 0:
            raise SearchSpaceError(f"{name}: {self!r} needs step > 0")
        if self.log and self.lo <= 0:
            raise SearchSpaceError(f"{name}: {self!r} needs lo > 0 on a log scale")
        if self.log and self.step != 1:
            raise SearchSpaceError(
                f"{name}: {self!r}: a log-scale integer takes no step (as in Optuna); drop step= or log=True"
            )
        rest = _off_the_steps(self.lo, self.hi, self.step)
        if rest is not None:
            raise _step_error(name, repr(self), self.lo, self.hi, self.step, rest)

    def to_optuna(self, name: str):
        from optuna.distributions import IntDistribution

        return IntDistribution(self.lo, self.hi, log=self.log, step=self.step)

    def __repr__(self) -> str:
        extra = (f", step={self.step}" if self.step != 1 else "") + (", log=True" if self.log else "")
        return f"integer({self.lo}, {self.hi}{extra})"


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


def uniform(lo: float, hi: float, step: float | None = None) -> Uniform:
    """A float drawn uniformly from ``[lo, hi]`` (Optuna's ``suggest_float``, Ray's ``tune.uniform``).

    ``step``: only ``lo, lo + step, ..., hi`` (Optuna's ``suggest_float(step=)``, Ray's ``tune.quniform``);
    ``hi - lo`` must be a multiple of it.
    """
    return Uniform(lo, hi, step=step)


def loguniform(lo: float, hi: float) -> Uniform:
    """A float whose logarithm is uniform in ``[log lo, log hi]``; needs ``0 < lo < hi`` (Optuna's
    ``suggest_float(log=True)``, Ray's ``tune.loguniform``)."""
    return Uniform(lo, hi, log=True)


def integer(lo: int, hi: int, step: int = 1, log: bool = False) -> Integer:
    """An int in ``[lo, hi]``, both ends inclusive (Optuna's ``suggest_int``; Ray's ``tune.randint(lo, hi + 1)``).

    ``step``: only ``lo, lo + step, ..., hi`` (``hi - lo`` must be a multiple of it; Ray's ``tune.qrandint``).
    ``log=True``: drawn on a log scale, for widths and batch sizes (needs ``lo > 0`` and no step, as in Optuna;
    Ray's ``tune.lograndint``).
    """
    return Integer(lo, hi, step=step, log=log)


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
        check_argument(fn, name, accepted)
        if isinstance(value, Space):
            value.validate(name)


def check_argument(fn: Callable | None, name: Any, accepted: set[str] | None) -> None:
    """Refuse ``name`` unless it is an argument ``fn`` takes by keyword (``accepted``: accepted_arguments(fn),
    None when ``fn`` takes any name or there is no function to check against)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise SearchSpaceError(f"{name!r}: search-space keys are argument names")
    if fn is not None and accepted is not None and name not in accepted:
        known = ", ".join(sorted(accepted)) or "none"
        raise SearchSpaceError(f"{name}: {fn.__name__}() has no argument {name!r} (it accepts: {known})")


def is_space_function(space: Any) -> TypeIs[Callable[..., Any]]:
    """Whether ``space`` is a define-by-run space: a function ``space(trial)`` that calls Optuna's
    ``trial.suggest_*`` (conditionally) and may return a dict of further arguments."""
    return callable(space) and not isinstance(space, Mapping)


def takes_only_trial(obj: Any) -> bool:
    """Whether ``obj`` is a function whose one parameter is named ``trial``: how a notebook cell's space function
    is told from its training function."""
    if not inspect.isfunction(obj):
        return False
    params = list(inspect.signature(obj).parameters.values())
    return len(params) == 1 and params[0].name == "trial"


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
