"""PBT's explore step: a member that copies a better one goes on with that member's hyperparameters, perturbed.

Each mutated value is resampled from its space with ``resample_probability``; otherwise a number is multiplied by
0.8 or 1.2 (kept inside its space, on its step) and a ``choice`` moves to a neighbouring option, as in Jaderberg et
al. 2017 and Ray Tune's PopulationBasedTraining. Mutations are the space objects the search space gives (or
``mutations=`` names): nothing leaves the space the user wrote.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from ..errors import SearchSpaceError
from ..space import Choice, Integer, Space, Uniform, accepted_arguments, check_argument, choice

__all__ = ["FACTORS", "Explorer", "check_mutations"]

FACTORS = (0.8, 1.2)


def check_mutations(
    fn: Callable, space: Mapping[str, Any], mutations: Mapping[str, Any] | None
) -> dict[str, Space | Callable]:
    """What PBT perturbs: ``mutations`` ({argument: space object, list of options, or a function returning a new
    value}) or, when None, every searched argument of ``space``; refused, naming the entry, when one cannot work."""
    if mutations is None:
        found: dict[str, Space | Callable] = {
            name: value for name, value in space.items() if isinstance(value, Space)
        }
        if not found:
            raise SearchSpaceError(
                "pbt() perturbs hyperparameters: give the search space at least one space object (e.g. "
                "{'lr': space.loguniform(1e-4, 1e-1)}), or say what to perturb with mutations="
            )
        return found
    if not isinstance(mutations, Mapping) or not mutations:
        raise SearchSpaceError(
            f"mutations={mutations!r}: give a dict {{argument: space object, list of options, or function}}"
        )
    accepted = accepted_arguments(fn)
    checked: dict[str, Space | Callable] = {}
    for name, how in mutations.items():
        check_argument(fn, name, accepted)
        if isinstance(how, (list, tuple)):
            how = choice(how)
        if isinstance(how, Space):
            how.validate(name)
        elif not callable(how):
            raise SearchSpaceError(
                f"mutations[{name!r}]={how!r}: give a space object, a list of options, or a function that "
                "returns a new value"
            )
        if name not in space:
            raise SearchSpaceError(
                f"mutations[{name!r}]: {name!r} is not in the search space; give it a starting value there "
                "(a space object to sample, or a constant)"
            )
        checked[name] = how
    return checked


class Explorer:
    """Perturbs a member's hyperparameters; seeded, so a seeded population explores the same way every run."""

    def __init__(self, mutations: dict[str, Space | Callable], resample_probability: float, seed: int | None):
        self.mutations = mutations
        self.resample_probability = resample_probability
        self.rng = random.Random(seed)

    def explore(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with every mutated value perturbed or resampled."""
        new = dict(params)
        for name, how in self.mutations.items():
            if callable(how) and not isinstance(how, Space):
                resample = self.rng.random() < self.resample_probability
                value = params.get(name)
                new[name] = how() if resample or not _is_number(value) else _clip_free(value, self.rng)
            elif self.rng.random() < self.resample_probability:
                new[name] = self.sample(how)
            else:
                new[name] = self.perturb(how, params[name])
        return new

    def sample(self, space: Space) -> Any:
        """A value drawn from ``space`` as Optuna's random sampler would."""
        if isinstance(space, Choice):
            return self.rng.choice(space.options)
        if isinstance(space, Integer):
            if space.log:
                return int(min(space.hi, max(space.lo, round(math.exp(self._uniform_log(space))))))
            return self.rng.randrange(space.lo, space.hi + 1, space.step)
        if isinstance(space, Uniform):
            value = math.exp(self._uniform_log(space)) if space.log else self.rng.uniform(space.lo, space.hi)
            return _on_step(space, value)
        raise SearchSpaceError(f"{space!r}: PBT cannot sample this kind of space")

    def _uniform_log(self, space: Uniform | Integer) -> float:
        return self.rng.uniform(math.log(space.lo), math.log(space.hi))

    def perturb(self, space: Space, value: Any) -> Any:
        """``value`` multiplied by 0.8 or 1.2 inside ``space``; a choice's neighbour."""
        if isinstance(space, Choice):
            index = _index_of(space, value)
            moved = index + self.rng.choice((-1, 1))
            return space.options[min(len(space.options) - 1, max(0, moved))]
        factor = self.rng.choice(FACTORS)
        if isinstance(space, Integer):
            scaled = round(value * factor)
            if scaled == value:  # too small to move by a fifth: one step, the same way
                scaled = value + (space.step if factor > 1 else -space.step)
            stepped = space.lo + round((scaled - space.lo) / space.step) * space.step
            return int(min(space.hi, max(space.lo, stepped)))
        if isinstance(space, Uniform):
            return _on_step(space, min(space.hi, max(space.lo, value * factor)))
        raise SearchSpaceError(f"{space!r}: PBT cannot perturb this kind of space")


def _on_step(space: Uniform, value: float) -> float:
    if space.step is None:
        return float(value)
    steps = round((value - space.lo) / space.step)
    # rounded as the step is written (0.1 * 3 is 0.30000000000000004 in binary floating point)
    return float(min(space.hi, round(space.lo + steps * space.step, 12)))


def _index_of(space: Choice, value: Any) -> int:
    for index, option in enumerate(space.options):
        if option is value or option == value:
            return index
    return 0  # a value from outside the options (a mutation's start): move from the first


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clip_free(value: float, rng: random.Random) -> float:
    """A function mutation's numeric value, perturbed with no space to keep it in (as Ray Tune does)."""
    scaled = value * rng.choice(FACTORS)
    return int(round(scaled)) if isinstance(value, int) else scaled
