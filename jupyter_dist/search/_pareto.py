"""Several objectives: which trials are non-dominated (the Pareto front), how much of the objective space the front
dominates (its hypervolume), and a Pareto-aware early stopping that Optuna does not have.

Everything is in "minimise" orientation inside (a maximised objective is negated), over plain lists of vectors, so
the search, the Experiment and the server share it without Optuna objects.

``ParetoPruner`` is successive halving on the non-dominated rank: at rungs of ``min_resource * 3^k`` steps, a
trial goes on only if, among every trial that reached that rung, it is on their Pareto front or in their best
third by (non-dominated rank, then crowding distance: NSGA-II's order); Optuna's pruners judge one value, and its
multi-objective studies cannot prune at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..protocol import Direction

__all__ = [
    "ParetoPruner",
    "crowding",
    "dominates",
    "hypervolume",
    "minimised",
    "non_dominated",
    "ranks",
    "rungs",
]

REDUCTION_FACTOR = 3


def minimised(vector: Sequence[float], directions: Sequence[Direction]) -> list[float]:
    """``vector`` with its maximised objectives negated: smaller is better in every coordinate."""
    return [-v if d is Direction.MAX else v for v, d in zip(vector, directions, strict=True)]


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """(Minimised vectors.) ``a`` is no worse than ``b`` in every objective and better in one."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


def ranks(vectors: Sequence[Sequence[float]]) -> list[int]:
    """(Minimised.) Each vector's non-dominated rank: 0 for the Pareto front, 1 for the front of the rest..."""
    n = len(vectors)
    dominated_by = [0] * n
    dominating: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if dominates(vectors[i], vectors[j]):
                dominating[i].append(j)
                dominated_by[j] += 1
            elif dominates(vectors[j], vectors[i]):
                dominating[j].append(i)
                dominated_by[i] += 1
    rank = [0] * n
    front = [i for i in range(n) if dominated_by[i] == 0]
    level = 0
    while front:
        following = []
        for i in front:
            rank[i] = level
            for j in dominating[i]:
                dominated_by[j] -= 1
                if dominated_by[j] == 0:
                    following.append(j)
        front, level = following, level + 1
    return rank


def non_dominated(vectors: Sequence[Sequence[float]]) -> list[int]:
    """(Minimised.) The indices of the Pareto front."""
    return [i for i, r in enumerate(ranks(vectors)) if r == 0]


def crowding(vectors: Sequence[Sequence[float]]) -> list[float]:
    """(Minimised, one front.) NSGA-II's crowding distance: how far each vector is from its neighbours (the
    extremes infinitely), so a front's spread is kept."""
    n = len(vectors)
    if n == 0:
        return []
    distance = [0.0] * n
    for k in range(len(vectors[0])):
        order = sorted(range(n), key=lambda i: vectors[i][k])
        low, high = vectors[order[0]][k], vectors[order[-1]][k]
        distance[order[0]] = distance[order[-1]] = math.inf
        if high == low:
            continue
        for before, at, after in zip(order, order[1:], order[2:], strict=False):
            distance[at] += (vectors[after][k] - vectors[before][k]) / (high - low)
    return distance


def hypervolume(vectors: Sequence[Sequence[float]], reference: Sequence[float]) -> float:
    """(Minimised.) The volume of objective space the vectors dominate, bounded by ``reference`` (vectors not
    below it in every objective add nothing). Exact: two objectives by a sweep, more with Optuna's WFG."""
    inside = [list(v) for v in vectors if all(x < r for x, r in zip(v, reference, strict=True))]
    if not inside:
        return 0.0
    if len(reference) == 2:
        volume, best_second = 0.0, reference[1]
        for first, second in sorted(inside):
            if second < best_second:
                volume += (reference[0] - first) * (best_second - second)
                best_second = second
        return volume
    import numpy as np
    from optuna._hypervolume import compute_hypervolume  # the one exact n-D hypervolume at hand

    return float(compute_hypervolume(np.asarray(inside, dtype=float), np.asarray(reference, dtype=float)))


def rungs(max_steps: int | None) -> tuple[int, int]:
    """Where the pruner's rungs start (min_resource) and its reduction factor, as ASHA places them."""
    return (max(1, (max_steps or 0) // REDUCTION_FACTOR**3) if max_steps else 1), REDUCTION_FACTOR


class ParetoPruner:
    """Successive halving on the non-dominated rank (see the module's docstring). ``report`` is given each
    running trial's objective vectors as they arrive, step by step."""

    def __init__(self, directions: Sequence[Direction], max_steps: int | None) -> None:
        self.directions = list(directions)
        self.min_resource, self.factor = rungs(max_steps)
        self.max_steps = max_steps
        # rung step -> trial id -> its minimised vector there (every trial that reached the rung, ended or not)
        self.at_rung: dict[int, dict[int, list[float]]] = {}
        self._next_rung: dict[int, int] = {}

    def rung_steps(self):
        step = self.min_resource
        while self.max_steps is None or step < self.max_steps:
            yield step
            step *= self.factor

    def report(self, trial_id: int, step: int, vector: Sequence[float]) -> bool:
        """A trial's objectives at ``step`` (all of them); True when it should stop."""
        rung = self._next_rung.get(trial_id, self.min_resource)
        if step + 1 < rung:  # steps count from 0: step k is the (k+1)th
            return False
        while True:  # the highest rung it has now reached, had it skipped some
            following = rung * self.factor
            if step + 1 < following or (self.max_steps is not None and following >= self.max_steps):
                break
            rung = following
        self._next_rung[trial_id] = rung * self.factor
        if self.max_steps is not None and rung >= self.max_steps:
            return False
        seen = self.at_rung.setdefault(rung, {})
        seen[trial_id] = minimised(vector, self.directions)
        if len(seen) < self.factor:
            return False  # too few to judge: promoted, as ASHA promotes the first ones
        ids = list(seen)
        vectors = [seen[i] for i in ids]
        rank = ranks(vectors)
        spread = {}
        for level in set(rank):
            members = [k for k, r in enumerate(rank) if r == level]
            for k, d in zip(members, crowding([vectors[k] for k in members]), strict=True):
                spread[k] = d
        order = sorted(range(len(ids)), key=lambda k: (rank[k], -spread[k]))
        # The best third goes on, as in successive halving, and every trial on the rung's front: halving the
        # front itself would lose the very trials a multi-objective search is for.
        kept = max(len(ids) // self.factor, rank.count(0))
        return ids.index(trial_id) not in order[:kept]
