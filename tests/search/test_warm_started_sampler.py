"""What a warm-started TPE does with the told trials: a cold search's settings, the told trials counted towards its
10 random start-up trials, so that told 10 it proposes from its model at the first ask. Keeping start-up trials of
its own was measured and needed more trials (docs/performance/warm-start.md)."""

from __future__ import annotations

import optuna
import pytest

from jupyter_dist import space
from jupyter_dist.protocol import Direction, Objective
from jupyter_dist.search import OptunaSearch

SPACE = {"x": space.uniform(0.0, 1.0), "y": space.uniform(0.0, 1.0)}
SEED = 5


def told(count: int) -> list:
    """``count`` completed trials along a diagonal, the last one best."""
    distributions = {name: s.to_optuna(name) for name, s in SPACE.items()}
    return [
        optuna.trial.create_trial(
            params={"x": i / count, "y": 1 - i / count}, distributions=distributions, value=float(i)
        )
        for i in range(count)
    ]


def first_point(count: int) -> dict:
    search = OptunaSearch(SPACE, trials=2, objective=Objective("v", Direction.MAX), sampler="tpe", seed=SEED)
    search.tell_earlier(told(count))
    return search.next_trial().params


def random_start_up_point() -> dict:
    """The first point TPE's start-up proposes at SEED (its random sampler is seeded with the same seed)."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=SEED))
    return study.ask({name: s.to_optuna(name) for name, s in SPACE.items()}).params


@pytest.mark.parametrize("count, random", [(0, True), (9, True), (10, False)])
def test_told_trials_count_towards_tpe_start_up(count, random):
    assert (first_point(count) == random_start_up_point()) is random
