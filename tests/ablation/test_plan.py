"""Ablation planning: the variants a study runs, and every bad input refused before any work starts."""

import pytest

import jupyter_dist as jd
from jupyter_dist.ablation import AblationError, plan_study


def train(features=("a", "b", "c"), augment=True, dropout: bool = True, seed=0, lr=0.1, verbose=False):
    return 0.0


def plan(fn=train, **kwargs):
    options = dict(features=None, modules=None, flags=None, groups=None, repeats=1, params=None, seed=0)
    options.update(kwargs)
    return plan_study(fn, **options)


def test_a_baseline_then_one_variant_per_component_then_groups():
    p = plan(
        features=["a", "b", "c"],
        modules=["enc.block2", "head.dropout"],
        flags=["augment"],
        groups={"both": ["enc.block2", "head.dropout"], "mixed": ["a", "augment"]},
    )
    assert [(v.name, v.kind) for v in p.variants] == [
        ("baseline", "baseline"),
        ("a", "feature"),
        ("b", "feature"),
        ("c", "feature"),
        ("enc.block2", "module"),
        ("head.dropout", "module"),
        ("augment", "flag"),
        ("both", "group"),
        ("mixed", "group"),
    ]
    params = {t.variant.name: t.params for t in p.trials}
    assert params["baseline"] == {"features": ["a", "b", "c"], "augment": True, "seed": 0}
    assert params["b"]["features"] == ["a", "c"]  # the full list minus b, order kept
    assert params["augment"] == {"features": ["a", "b", "c"], "augment": False, "seed": 0}
    assert params["mixed"] == {"features": ["b", "c"], "augment": False, "seed": 0}
    assert params["enc.block2"] == params["baseline"]  # modules go through ablate(), not arguments
    assert p.modules == ("enc.block2", "head.dropout")
    assert p.removed_modules() == {
        4: ("enc.block2",),
        5: ("head.dropout",),
        7: ("enc.block2", "head.dropout"),
    }


def test_repeats_run_every_variant_with_the_same_seed_per_repeat():
    p = plan(features=["a", "b"], repeats=3, seed=10, params={"lr": 0.5})
    assert len(p.trials) == 3 * 3
    assert [t.trial_id for t in p.trials] == list(range(9))
    by_repeat = {}
    for t in p.trials:
        by_repeat.setdefault(t.repeat, set()).add(t.params["seed"])
        assert t.params["lr"] == 0.5
    assert by_repeat == {0: {10}, 1: {11}, 2: {12}}  # paired: every variant of a repeat shares its seed
    assert [t.variant.name for t in p.trials[:3]] == ["baseline", "a", "b"]  # repeat-major


def test_no_seed_is_passed_to_a_function_without_one():
    def no_seed(features=()):
        return 0.0

    p = plan(no_seed, features=["a", "b"], repeats=2)
    assert all("seed" not in t.params for t in p.trials)


def test_a_bool_annotated_flag_without_default_is_a_flag():
    def g(fancy: bool):
        return 0.0

    assert plan(g, flags=["fancy"]).trials[1].params == {"fancy": False}


def test_kwargs_functions_take_any_feature_or_flag():
    def anything(**kwargs):
        return 0.0

    p = plan(anything, features=["a"], flags=["x"])
    assert p.trials[0].params == {"features": ["a"], "x": True}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "empty ablation study"),
        ({"features": []}, "empty ablation study"),
        ({"features": ["a", "b", "a"]}, "features= names 'a' more than once"),
        ({"features": "abc"}, "takes a list of names"),
        ({"features": ["a"], "modules": ["a"]}, "'a' is both a feature and a module"),
        ({"flags": ["lr"]}, "defaults to 0.1, not a boolean"),
        ({"flags": ["verbose"]}, "defaults to False, so leaving it out"),
        ({"flags": ["nope"]}, "train() has no argument 'nope'"),
        ({"modules": ["enc..x"]}, "dotted name"),
        ({"features": ["a"], "groups": {"a": ["a", "b"]}}, "has the name of a component"),
        ({"features": ["a", "b"], "groups": {"g": ["a"]}}, "at least two components"),
        ({"features": ["a", "b"], "groups": {"g": ["a", "zz"]}}, "names 'zz', which is not among"),
        (
            {"features": ["a", "b"], "groups": {"g": ["a", "b"], "h": ["b", "a"]}},
            "'h' leaves out the same components as 'g'",
        ),
        ({"features": ["a"], "repeats": 0}, "repeats=0"),
        ({"features": ["a"], "params": {"nope": 1}}, "train() has no argument 'nope'"),
        ({"features": ["a"], "repeats": 2, "params": {"seed": 1}}, "params= fixes seed"),
    ],
)
def test_bad_studies_are_refused_with_a_message_naming_the_problem(kwargs, message):
    with pytest.raises(AblationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(**kwargs)


def test_features_need_a_features_argument_and_are_refused_before_any_work():
    def no_features(lr=0.1):
        return lr

    # cluster= an address nobody listens on: the error must come before any connection is tried
    with pytest.raises(
        AblationError, match="features= needs a `features` argument: no_features\\(\\) takes lr"
    ):
        jd.ablation(no_features, features=["a"], metric="m", cluster="tcp://127.0.0.1:9", progress=False)
    with pytest.raises(ValueError, match="ablation\\(\\) needs metric="):
        jd.ablation(train, features=["a"], progress=False)


def test_a_required_non_bool_argument_is_not_a_flag():
    def f(fancy):
        return 0.0

    with pytest.raises(AblationError, match="has no default"):
        plan(f, flags=["fancy"])
