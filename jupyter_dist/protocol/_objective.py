"""``Objective``: the one place that knows which metric counts, which way is better and over which of a trial's
reports (its ``scope``: ``ScopedValue``); it picks the values the pruner judges and each trial's final value, and
says, in one message, when the metric is missing."""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError
from ._messages import Outcome
from ._states import Direction, ErrorKind, TrialState

__all__ = ["SCOPES", "Objective", "ScopedValue", "check_scope"]

# What a trial's value is, over its current attempt's reports of the objective (Ray Tune's ``scope``); a returned
# value counts as the attempt's final report.
SCOPES = ("last", "max", "min", "avg", "last-5-avg", "last-10-avg")


class ScopedValue:
    """A trial attempt's value under a scope, kept up to date one report at a time (O(1) each: a pruner asks it
    at every step, and a trial may report thousands of them)."""

    def __init__(self, scope: str = "last") -> None:
        self.scope = scope
        self.count = 0
        self.value: float | None = None  # the scope over the values added so far
        self._total = 0.0
        # The last k values, for "last-k-avg": a ring, so each report costs the same however long the curve.
        self._window = int(scope.split("-")[1]) if scope.startswith("last-") else 0
        self._recent: list[float] = []

    def add(self, value: float) -> float:
        """One more report of the objective; the scope over every report so far."""
        scope, self.count = self.scope, self.count + 1
        if scope == "last" or self.value is None:
            self.value = value
        elif scope == "max":
            self.value = max(self.value, value)
        elif scope == "min":
            self.value = min(self.value, value)
        if scope == "avg":
            self._total += value
            self.value = self._total / self.count
        elif self._window:
            if len(self._recent) == self._window:
                oldest = (self.count - 1) % self._window
                self._total -= self._recent[oldest]
                self._recent[oldest] = value
            else:
                self._recent.append(value)
            self._total += value
            self.value = self._total / len(self._recent)
        return self.value

    def copy(self) -> ScopedValue:
        copy = ScopedValue(self.scope)
        copy.__dict__.update(self.__dict__, _recent=list(self._recent))
        return copy


def check_scope(scope: Any) -> str:
    if scope not in SCOPES:
        raise ArgumentError(f"objective_scope={scope!r}: use one of {', '.join(map(repr, SCOPES))}")
    return scope


@dataclass(frozen=True)
class Objective:
    """The metric an experiment optimises and which way; ``metric=None``: nothing to optimise (data-parallel).
    ``scope``: which of a trial's reports make its value (``SCOPES``): the last one (the returned value, else the
    last report), or the max, min, mean, or mean of the last 5 or 10, of its current attempt's reports.

    ``others``: the objectives beyond the first of a multi-objective search, (metric, direction) each. A trial's
    value is still its first objective's; its value of each other one (the returned value, else its last report)
    is put in its ``last`` metrics as it is judged, so ``values(value, last)`` gives the whole vector."""

    metric: str | None
    direction: Direction = Direction.MAX
    scope: str = "last"
    others: tuple[tuple[str, Direction], ...] = ()

    @classmethod
    def of(cls, metric: Any, mode: Any, scope: str = "last") -> Objective:
        """The objective of ``metric=``/``mode=`` as the API takes them: a name and "max"/"min", or (several
        objectives) lists of names and of modes, one each; an ArgumentError naming what does not fit."""
        if not isinstance(metric, (list, tuple)):
            return cls(metric, Direction.parse(mode), scope)
        names = list(metric)
        if len(names) < 2 or not all(isinstance(n, str) and n for n in names):
            raise ArgumentError(f"metric={metric!r}: give a metric's name, or a list of two or more names")
        if len(set(names)) < len(names):
            raise ArgumentError(f"metric={metric!r}: each objective once")
        if not isinstance(mode, (list, tuple)) or len(mode) != len(names):
            raise ArgumentError(
                f"metric={metric!r} has {len(names)} objectives: give one mode each, e.g. "
                f"mode={['max'] + ['min'] * (len(names) - 1)!r} (not mode={mode!r})"
            )
        if scope != "last":
            raise ArgumentError(
                f"objective_scope={scope!r}: several objectives are each valued by the trial's returned or last "
                "reported value (scope 'last')"
            )
        directions = [Direction.parse(m) for m in mode]
        return cls(names[0], directions[0], scope, tuple(zip(names[1:], directions[1:], strict=True)))

    @property
    def several(self) -> bool:
        """A multi-objective search."""
        return bool(self.others)

    @property
    def metrics(self) -> tuple[str | None, ...]:
        """Each objective's metric, in order; ``(None,)`` with nothing to optimise."""
        return (self.metric, *(name for name, _ in self.others))

    @property
    def directions(self) -> tuple[Direction, ...]:
        return (self.direction, *(direction for _, direction in self.others))

    def values(self, value: float | None, last: dict[str, float]) -> list[float] | None:
        """A judged trial's value of every objective, in order; None when one is missing."""
        vector = [value, *(last.get(name) for name, _ in self.others)]
        present = [float(v) for v in vector if v is not None]
        return present if len(present) == len(vector) else None

    def by_metric(self, value: float | None, last: dict[str, float]) -> dict[str, float | None]:
        """Each objective's value of a trial by its metric's name, for the tables: the first is ``value``, the
        others as it reported or returned them (a running trial's latest); None where it has none."""
        first, *others = (str(name) for name in self.metrics)
        return {first: value, **{name: last.get(name) for name in others}}

    def better(self, a: float, b: float) -> bool:
        return self.direction.better(a, b)

    def reaches(self, value: float, target: float) -> bool:
        """Whether ``value`` is at ``target`` or beyond it, the better way."""
        return value >= target if self.direction is Direction.MAX else value <= target

    def intermediate(self, metrics: dict[str, float]) -> float | None:
        """The value a pruner judges at one reported step (None: the step did not report the metric)."""
        return metrics.get(self.metric) if self.metric else None

    def tracker(self) -> ScopedValue:
        return ScopedValue(self.scope)

    def scoped(self, values: list[float]) -> list[float]:
        """A curve of the objective's reports, in the order they were made, as the scope sees it: its value
        after each report (what a pruner is given at that step; the last is the trial's value)."""
        tracker = self.tracker()
        return [tracker.add(value) for value in values]

    def judge(self, outcome: Outcome, reports: ScopedValue | None = None) -> Outcome:
        """Set ``outcome.value``: a completed trial's objective, or a pruned/stopped one's last value (as Optuna
        keeps it), under the scope. ``reports``: the attempt's reports of the metric so far, for a scope other
        than "last". A completed trial without a usable value becomes failed, with ``ErrorKind.METRIC``."""
        if self.metric is None or outcome.state is TrialState.FAILED:
            return outcome
        returned = outcome.returned
        if isinstance(returned, float):
            final = returned
        elif isinstance(returned, dict) and self.metric in returned:
            final = returned[self.metric]
        else:
            final = None
        # the attempt's reports, when the scope values the trial by them
        scoped = reports if self.scope != "last" and reports is not None and reports.count else None
        if outcome.state is not TrialState.COMPLETED:
            value = scoped.value if scoped is not None else outcome.last.get(self.metric)
            return dataclasses.replace(outcome, value=value)
        if scoped is not None:
            # a returned value counts as the attempt's final report (on a copy: a pruner may ask again)
            value = scoped.value if final is None else scoped.copy().add(final)
        elif final is not None:
            value = final
        elif self.metric in outcome.last:
            value = outcome.last[self.metric]
        else:
            seen = sorted(set(outcome.last) | set(returned if isinstance(returned, dict) else {}))
            close = difflib.get_close_matches(self.metric, seen, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return self._failed(
                outcome,
                f"the training function neither returned nor reported metric {self.metric!r} "
                f"(it reported/returned: {', '.join(seen) or 'nothing'}); {hint}report it with "
                f"jupyter_dist.report({self.metric}=...) or return it, or pick another metric",
            )
        assert value is not None  # a scope over one report or more has a value
        if math.isnan(value):
            return self._failed(outcome, f"the objective {self.metric!r} is NaN")
        if self.others:
            return self._judge_others(dataclasses.replace(outcome, value=value))
        return dataclasses.replace(outcome, value=value)

    def _judge_others(self, outcome: Outcome) -> Outcome:
        """A completed trial's value of each objective beyond the first, into its ``last`` metrics."""
        returned = outcome.returned if isinstance(outcome.returned, dict) else {}
        last = dict(outcome.last)
        for name, _ in self.others:
            value = returned.get(name, last.get(name))
            if value is None:
                seen = ", ".join(sorted(set(last) | set(returned))) or "nothing"
                return self._failed(
                    outcome,
                    f"the training function neither returned nor reported objective {name!r} (it "
                    f"reported/returned: {seen}); report it with jupyter_dist.report({name}=...) or return it",
                )
            if math.isnan(value):
                return self._failed(outcome, f"the objective {name!r} is NaN")
            last[name] = float(value)
        return dataclasses.replace(outcome, last=last)

    @staticmethod
    def _failed(outcome: Outcome, problem: str) -> Outcome:
        return dataclasses.replace(
            outcome, state=TrialState.FAILED, error=problem, error_kind=ErrorKind.METRIC, value=None
        )
