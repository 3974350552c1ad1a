import json
import re

import pytest

from jupyter_dist import SearchSpaceError, space
from jupyter_dist.space import constants, searched, validate_space


def train(lr=0.1, layers=2, opt="sgd"):
    return lr


def train_kwargs(lr=0.1, **rest):
    return lr


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"lr": space.uniform(1.0, 1.0)}, "lr: uniform(lo=1.0, hi=1.0) needs lo < hi"),
        ({"lr": space.uniform(2, 1)}, "lr: uniform(lo=2, hi=1) needs lo < hi"),
        ({"lr": space.loguniform(0, 1)}, "lr: loguniform(lo=0, hi=1) needs lo > 0"),
        ({"lr": space.loguniform(-1, 1)}, "needs lo > 0"),
        ({"layers": space.integer(3, 3)}, "layers: integer(lo=3, hi=3) needs lo < hi"),
        ({"layers": space.integer(1.5, 3)}, "layers: integer lo must be an int"),
        ({"opt": space.choice([])}, "opt: choice([]) is empty"),
        ({"lr": space.uniform(float("nan"), 1)}, "lr: uniform lo must be a finite number"),
        ({"momentum": space.uniform(0, 1)}, "momentum: train() has no argument 'momentum'"),
    ],
)
def test_bad_spaces_are_refused_naming_the_argument(bad, message):
    with pytest.raises(SearchSpaceError, match=re.escape(message)):
        validate_space(train, bad)


def test_unknown_names_pass_when_the_function_takes_kwargs():
    validate_space(train_kwargs, {"anything": space.uniform(0, 1), "lr": 0.3})


def test_reporter_is_not_a_searchable_argument():
    def f(lr, reporter):
        return lr

    with pytest.raises(SearchSpaceError, match="reporter: f\\(\\) has no argument"):
        validate_space(f, {"reporter": space.choice([1, 2])})


def test_choice_needs_a_list():
    with pytest.raises(SearchSpaceError, match="choice\\(\\) takes a list"):
        space.choice("abc")


def test_constants_and_searched_split_the_space():
    s = {"lr": space.uniform(0, 1), "layers": 3}
    assert searched(s) == {"lr": space.uniform(0, 1)}
    assert constants(s) == {"layers": 3}


def test_choices_of_any_objects_map_through_indices():
    options = [(1, 2), dict, "x"]
    c = space.choice(options)
    dist = c.to_optuna("opt")
    assert list(dist.choices) == [0, 1, 2]
    assert [c.from_optuna(i) for i in dist.choices] == options
    plain = space.choice(["a", 1, None])
    assert list(plain.to_optuna("p").choices) == ["a", 1, None]
    assert plain.from_optuna("a") == "a"


def test_integer_bounds_are_inclusive():
    dist = space.integer(1, 4).to_optuna("n")
    assert (dist.low, dist.high) == (1, 4)
    assert space.loguniform(1e-3, 1).to_optuna("lr").log


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            {"layers": space.integer(1, 10, step=2)},
            "layers: integer(1, 10, step=2): hi - lo = 9 is not a multiple ",
        ),
        ({"layers": space.integer(1, 10, step=2)}, "use hi=9 or hi=11"),
        ({"layers": space.integer(1, 9, step=0)}, "layers: integer(1, 9, step=0) needs step > 0"),
        ({"layers": space.integer(1, 9, step=-2)}, "needs step > 0"),
        ({"layers": space.integer(1, 9, step=1.5)}, "layers: integer step must be an int, got 1.5"),
        ({"layers": space.integer(0, 64, log=True)}, "layers: integer(0, 64, log=True) needs lo > 0"),
        (
            {"layers": space.integer(2, 64, step=2, log=True)},
            "a log-scale integer takes no step (as in Optuna)",
        ),
        ({"lr": space.uniform(0, 1, step=0.3)}, "lr: uniform(0, 1, step=0.3): hi - lo = 1 is not a multiple"),
        ({"lr": space.uniform(0, 1, step=0.3)}, "use hi=0.9 or hi=1.2"),
        ({"lr": space.uniform(0, 1, step=0)}, "lr: uniform(0, 1, step=0) needs step > 0"),
        ({"lr": space.uniform(0, 1, step=float("inf"))}, "lr: uniform step must be a finite number"),
        ({"lr": space.Uniform(1e-3, 1, log=True, step=0.1)}, "a log-scale float takes no step"),
    ],
)
def test_bad_steps_and_log_scales_are_refused_naming_the_fix(bad, message):
    with pytest.raises(SearchSpaceError, match=re.escape(message)):
        validate_space(train, bad)


def test_steps_and_log_scales_reach_optuna_unchanged():
    """Optuna's own adjustment of a range that is not a multiple of its step never happens: it is refused."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Optuna warns when it moves hi
        # 0.7 - 0.1 is 0.5999... in binary: on its steps in decimal, as Optuna checks it
        ok = {
            "lr": space.uniform(0.1, 0.7, step=0.2),
            "n": space.integer(2, 10, step=4),
            "w": space.integer(8, 512, log=True),
        }
        validate_space(train_kwargs, ok)
        lr, n, w = (s.to_optuna(k) for k, s in ok.items())
    assert (lr.low, lr.high, lr.step, lr.log) == (0.1, 0.7, 0.2, False)
    assert (n.low, n.high, n.step, n.log) == (2, 10, 4, False)
    assert (w.low, w.high, w.step, w.log) == (8, 512, 1, True)


def test_the_repr_shows_step_and_log():
    assert repr(space.uniform(0, 1, step=0.1)) == "uniform(0, 1, step=0.1)"
    assert repr(space.uniform(0, 1)) == "uniform(0, 1)"
    assert repr(space.integer(0, 10, step=2)) == "integer(0, 10, step=2)"
    assert repr(space.integer(8, 512, log=True)) == "integer(8, 512, log=True)"
    assert repr(space.integer(1, 4)) == "integer(1, 4)"


def test_the_store_keeps_step_and_log_and_reads_spaces_stored_before_them():
    from jupyter_dist.store._codec import space_from_json, space_to_json

    s = {
        "lr": space.uniform(0, 1, step=0.25),
        "lo": space.loguniform(1e-4, 1),
        "n": space.integer(0, 10, step=2),
        "w": space.integer(8, 512, log=True),
        "k": space.integer(1, 3),
    }
    assert space_from_json(json.loads(json.dumps(space_to_json(s)))) == s
    assert space_to_json({"k": space.integer(1, 3)}) == {"k": {"integer": [1, 3]}}  # as stored before
    old = {"lr": {"uniform": [0, 1], "log": False}, "k": {"integer": [1, 3]}}
    assert space_from_json(old) == {"lr": space.uniform(0, 1), "k": space.integer(1, 3)}


def test_takes_only_trial_tells_a_space_function_from_a_training_function():
    from jupyter_dist.space import is_space_function, takes_only_trial

    def conditional(trial):
        return None

    assert takes_only_trial(conditional) and is_space_function(conditional)
    assert not takes_only_trial(train) and not takes_only_trial(lambda t: t) and not is_space_function({})
