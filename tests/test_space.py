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
