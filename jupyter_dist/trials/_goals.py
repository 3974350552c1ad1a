"""When a trial, or the whole experiment, has reached its goal: a per-trial stop rule (Ray Tune's ``stop=``) and
an experiment-level target on the objective. The trial loop asks them in the kernel, on its own thread."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ArgumentError, HookFailed
from ..protocol import Direction, Objective

__all__ = ["Constraints", "StopRule", "check_target"]


class StopRule:
    """A trial is done once one of its reports meets the rule: ``{metric: threshold}`` (any one metric at its
    threshold), or a callable ``(trial_id, metrics) -> bool`` given each report's metrics.

    A threshold is met at ``metric >= threshold`` (as Ray Tune compares), except the objective's own metric in
    mode "min", met at ``metric <= threshold``: a loss reaching a low value is the goal there.
    """

    def __init__(
        self, rule: Mapping[str, float] | Callable[[int, dict[str, float]], Any], objective: Objective
    ):
        self.rule = rule
        self.minimised = objective.metric if objective.direction is Direction.MIN else None

    @classmethod
    def of(cls, rule: Any, objective: Objective) -> StopRule | None:
        """The rule ``stop=`` gives (None: none); an ArgumentError naming what cannot work."""
        if rule is None:
            return None
        if isinstance(rule, Mapping):
            if not rule:
                raise ArgumentError("stop={}: give {metric: threshold}, e.g. stop={'val_acc': 0.99}, or None")
            for metric, threshold in rule.items():
                if not isinstance(metric, str) or not metric:
                    raise ArgumentError(
                        f"stop={dict(rule)!r}: the key {metric!r} is not a metric's name; write "
                        "stop={'val_acc': 0.99}"
                    )
                if not _is_number(threshold):
                    raise ArgumentError(
                        f"stop={dict(rule)!r}: the threshold of {metric!r} is {threshold!r}; give a number, "
                        f"e.g. stop={{{metric!r}: 0.99}}"
                    )
            return cls(dict(rule), objective)
        if callable(rule):
            return cls(rule, objective)
        raise ArgumentError(
            f"stop={rule!r:.60}: give {{metric: threshold}} (e.g. {{'val_acc': 0.99}}) or a function "
            "(trial_id, metrics) -> bool"
        )

    def met(self, trial_id: int, metrics: dict[str, float]) -> bool:
        """Whether one report's ``metrics`` meet the rule (a callable that raises fails the run: HookFailed)."""
        rule = self.rule
        if not isinstance(rule, dict):
            try:
                return bool(rule(trial_id, dict(metrics)))  # type: ignore[operator]  # a function, not a dict
            except Exception as exc:
                raise HookFailed(
                    f"stop={self.describe()} raised {type(exc).__name__}: {exc} (trial {trial_id}, {metrics})"
                ) from exc
        for metric, threshold in rule.items():
            value = metrics.get(metric)
            if value is None:
                continue
            if value <= threshold if metric == self.minimised else value >= threshold:
                return True
        return False

    def describe(self) -> Any:
        """What the definition's details keep of it (JSON): the dict, or the function's name."""
        rule = self.rule
        return rule if isinstance(rule, dict) else getattr(rule, "__qualname__", repr(rule))


class Constraints:
    """``constraints=``: a function of a completed trial's metrics (its last report of each, and what it returned)
    giving one number per constraint, each <= 0 when it holds (Optuna's ``Trial.set_constraint``). Evaluated in
    the kernel as each trial completes; the samplers that take constraints prefer trials that meet them, and
    ``exp.pareto`` lists only those."""

    def __init__(self, fn: Callable[[dict[str, float]], Any]) -> None:
        self.fn = fn

    @classmethod
    def of(cls, fn: Any) -> Constraints | None:
        if fn is None:
            return None
        if not callable(fn):
            raise ArgumentError(
                f"constraints={fn!r}: give a function of a trial's metrics returning a number per constraint, "
                "each <= 0 when it holds, e.g. lambda m: [m['latency_ms'] - 20]"
            )
        return cls(fn)

    def values(self, metrics: dict[str, float]) -> list[float]:
        """The constraints of a trial whose metrics are ``metrics``; an ArgumentError naming a bad answer."""
        answer = self.fn(dict(metrics))
        values = [answer] if _is_number(answer) else answer
        try:
            checked = [float(v) for v in values if _is_number(v)]
        except TypeError:
            checked = []
        if not checked or len(checked) != len(values):
            name = getattr(self.fn, "__name__", "constraints")
            raise ArgumentError(
                f"constraints: {name}({metrics!r}) returned {answer!r}; return a number or a list of numbers, "
                "each <= 0 when its constraint holds"
            )
        return checked

    def describe(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


def check_target(target: Any, objective: Objective) -> float | None:
    """``target=``: a finite number the objective is to reach (None: none)."""
    if target is None:
        return None
    if not _is_number(target) or not math.isfinite(target):
        raise ArgumentError(f"target={target!r}: give the objective's value to stop at (a number), or None")
    if objective.metric is None:
        raise ArgumentError("target= needs metric=: the objective whose value is to reach it")
    if objective.several:
        raise ArgumentError(
            f"target={target!r}: with several objectives ({', '.join(map(str, objective.metrics))}) no one value says the "
            "search is done; give a stop rule per trial (stop=) or a timeout= instead"
        )
    return float(target)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
