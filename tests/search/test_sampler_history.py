"""The search's Optuna study keeps no finished trial for the samplers that need none (random, grid, QMC, no pruner),
and those samplers propose what they proposed with every trial kept; TPE and the pruners keep what they read."""

import warnings

import optuna
import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import Objective, Outcome, TrialState
from jupyter_dist.search import OptunaSearch

SPACE = {"x": space.uniform(0, 1), "lr": space.loguniform(1e-4, 1e-1), "n": space.integer(1, 9)}
GRID = {"a": space.choice([1, 2, 3]), "b": space.choice(["p", "q", "r", "s"]), "c": space.choice([0.5, 1.5])}


def search(searched=SPACE, trials=50, sampler="random", pruner=None, history=False, **options):
    s = OptunaSearch(
        searched, trials=trials, objective=Objective("v"), sampler=sampler, pruner=pruner, **options
    )
    if history:
        s.keep_history()
    return s


def run(s, value=lambda params: 0.0):
    """Every trial asked and told in turn; their parameters."""
    asked = []
    while (spec := s.next_trial()) is not None:
        asked.append(spec.params)
        s.tell(Outcome(spec.trial_id, None, TrialState.COMPLETED, value=value(spec.params)))
    return asked


def held(s):
    return len(s.study.get_trials(deepcopy=False))


def test_a_long_random_search_keeps_no_finished_trial():
    s = search(trials=3000, seed=0)
    assert not s.keeps_history
    run(s, value=lambda p: p["x"])
    # the first completed trial, the best one and the last one told: not 3,000
    assert held(s) <= 3
    assert len(s._numbers) <= 1 and not s._pending and not s._steps_seen
    assert s.study.best_trial.value == max(t.value for t in s.study.get_trials(deepcopy=False))
    last = s.frozen_trial(2999)
    assert last.number == 2999 and last.state == optuna.trial.TrialState.COMPLETE
    with pytest.raises(jd.ArgumentError, match="keeps only its running trials and the last one told"):
        s.frozen_trial(10)


def test_running_trials_are_kept_until_told():
    s = search(trials=10, seed=0)
    specs = [s.next_trial() for _ in range(4)]
    assert held(s) == 4
    s.tell(Outcome(specs[2].trial_id, None, TrialState.COMPLETED, value=1.0))
    s.tell(Outcome(specs[0].trial_id, None, TrialState.FAILED))
    running = [
        t.number for t in s.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    ]
    assert running == [1, 3]
    assert s.frozen_trial(specs[0].trial_id).state == optuna.trial.TrialState.FAIL
    assert s.next_trial().trial_id == 4  # numbers go on from the trials ever made


def test_random_proposes_the_same_points_as_with_every_trial_kept():
    assert run(search(seed=3)) == run(search(seed=3, history=True))


def test_the_grid_runs_every_point_once_as_with_every_trial_kept():
    s = search(GRID, trials=None, sampler="grid", seed=1)
    assert not s.keeps_history
    points = run(s)
    assert len(points) == 24
    assert {(p["a"], p["b"], p["c"]) for p in points} == {
        (a, b, c) for a in (1, 2, 3) for b in "pqrs" for c in (0.5, 1.5)
    }
    assert held(s) <= 3
    assert points == run(search(GRID, trials=None, sampler="grid", seed=1, history=True))


def test_the_grid_past_its_size_picks_the_points_not_run_from_its_own_count():
    """Trial numbers past the grid's size (a resumed search's) pick a point neither run nor running, as Optuna's
    grid does from the trials it holds."""
    s = search(GRID, trials=None, sampler="grid", seed=1)
    sampler = s.study.sampler
    for grid_id in range(24):
        if grid_id not in (5, 17):
            sampler.finished(grid_id)
    sampler._running.add(5)
    assert sampler._get_unvisited_grid_ids(s.study) == [17]
    sampler.finished(17)
    assert sampler._get_unvisited_grid_ids(s.study) == [5]  # every point started: the one not finished


def test_qmc_gives_its_sequence():
    def qmc():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.QMCSampler(seed=0)

    s = search(sampler=qmc(), trials=40)
    assert not s.keeps_history
    points = run(s)
    assert held(s) <= 3
    assert points == run(search(sampler=qmc(), trials=40, history=True))
    # after the first point (drawn at random), Optuna's own ask/tell study gives the same Sobol points
    study = optuna.create_study(sampler=qmc(), direction="maximize")
    distributions = {name: s.to_optuna(name) for name, s in SPACE.items()}
    for params in points:
        trial = study.ask(distributions)
        assert trial.params == pytest.approx({**params, "n": params["n"]})
        study.tell(trial, 0.0)


def test_learning_samplers_pruners_and_user_samplers_keep_every_trial():
    assert search(sampler="tpe").keeps_history
    assert search(pruner="asha", max_steps=9).keeps_history
    assert search(pruner="median").keeps_history
    assert search(sampler=optuna.samplers.GridSampler({"x": [0.5]})).keeps_history

    class Reading(optuna.samplers.RandomSampler):  # a subclass may read the trials its parent did not
        pass

    assert search(sampler=Reading()).keeps_history
    s = search(trials=20, history=True)
    run(s)
    assert held(s) == 20


def test_a_random_search_with_a_pruner_still_prunes():
    s = search(trials=None, unlimited=True, pruner="median", max_steps=10, seed=0)
    for _ in range(6):
        spec = s.next_trial()
        assert not s.report(spec.trial_id, [(step, {"v": 1.0 + step}, 0.0) for step in range(10)])
        s.tell(Outcome(spec.trial_id, None, TrialState.COMPLETED, value=10.0))
    spec = s.next_trial()
    assert s.report(spec.trial_id, [(step, {"v": -1.0}, 0.0) for step in range(3)])
    assert held(s) == 7


def test_a_sampler_window_keeps_the_newest_finished_trials_for_tpe_and_the_pruner():
    """hpo(sampler_window=): TPE and the pruner see the newest trials and the best; the study holds no more, so
    the time each ask takes stops growing with the trials before it."""
    s = search(trials=400, sampler="tpe", pruner="median", seed=0, window=50)
    assert not s.keeps_history
    told = run(s, value=lambda p: p["x"])
    assert len(told) == 400
    finished = s.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    numbers = [t.number for t in finished]
    assert len(finished) <= 52  # the newest 50, the best, the first
    assert numbers[-50:] == list(range(350, 400))
    assert s.study.best_trial.value == max(p["x"] for p in told)
    # Without one, every trial stays.
    everything = search(trials=120, sampler="tpe", pruner="median", seed=0)
    run(everything, value=lambda p: p["x"])
    assert everything.keeps_history and held(everything) == 120


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "100"])
def test_a_sampler_window_that_is_not_a_positive_whole_number_is_refused_naming_it(bad):
    with pytest.raises(jd.ArgumentError, match="sampler_window="):
        search(sampler="tpe", window=bad)
