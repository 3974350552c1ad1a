"""Each option is defined once (jupyter_dist/kinds/_spec.py: RunOptions and each kind's arguments dataclass): the
entry points' explicit signatures, their docstrings, the magic's options and what a call hands its kind all come
from, or are checked against, those definitions."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import jupyter_dist as jd
from jupyter_dist.errors import ArgumentError
from jupyter_dist.kinds import Kind, RunOptions, kind_of, option, registered
from jupyter_dist.magics._distribute import _parser
from jupyter_dist.protocol import ExperimentKind

ENTRY_POINTS = {
    ExperimentKind.HPO: jd.hpo,
    ExperimentKind.PBT: jd.pbt,
    ExperimentKind.ABLATION: jd.ablation,
    ExperimentKind.DDP: jd.data_parallel,
}


def _parameters(entry_point) -> dict[str, inspect.Parameter]:
    return {name: p for name, p in inspect.signature(entry_point).parameters.items() if name != "fn"}


@pytest.mark.parametrize("kind", list(ENTRY_POINTS), ids=str)
def test_each_entry_point_takes_exactly_its_kinds_options_with_their_defaults(kind):
    entries = {entry.name: entry for entry in kind_of(kind).entries()}
    parameters = _parameters(ENTRY_POINTS[kind])
    assert set(parameters) == set(entries)
    for name, parameter in parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # data_parallel(**kwargs_for_train)
            continue
        expected = entries[name].default
        if expected is dataclasses.MISSING:  # required
            assert parameter.default is inspect.Parameter.empty, name
        else:
            assert parameter.default == expected and type(parameter.default) is type(expected), name


@pytest.mark.parametrize("kind", list(ENTRY_POINTS), ids=str)
def test_each_entry_points_docstring_documents_every_option_from_its_definition(kind):
    doc = inspect.getdoc(ENTRY_POINTS[kind])
    section = doc[doc.index("Parameters\n----------") :]
    headings = [line for line in section.splitlines()[2:] if line and not line.startswith(" ")]
    documented = {name.strip() for line in headings for name in line.split(",")}
    named = {e.name for e in kind_of(kind).entries() if e.help or e.spec.with_option}
    assert named <= documented, named - documented
    for entry in kind_of(kind).entries():
        if entry.help:
            # the definition's own words (its first ones, before any wrapping) are what the docstring says
            assert " ".join(entry.help.split()[:4]) in " ".join(section.split()), entry.name


def test_the_magic_offers_every_option_that_has_a_magic_help_under_its_flag_and_name():
    parser = _parser(registered())
    flags: dict[str, list[str]] = {}
    for action in parser._actions:
        flags.setdefault(action.dest, []).extend(action.option_strings)
        if action.dest != "out":  # the definitions' defaults apply (per kind) where the line leaves an option
            assert action.default is None, action.dest
    for kind in registered():
        for entry in kind.entries():
            if entry.spec.short is not None:
                assert set(entry.flags) <= set(flags[entry.name]), entry.name


def test_an_option_of_one_kind_only_is_refused_by_the_others_before_any_work():
    with pytest.raises(ArgumentError, match="stop= is not an argument of a pbt experiment"):
        kind_of(ExperimentKind.PBT).sort({"search_space": {}, "stop": {"acc": 1}})


def test_sorting_gives_the_run_options_and_the_kinds_own_arguments_with_the_kinds_defaults():
    options, own = kind_of(ExperimentKind.DDP).sort(
        {"workers": 3, "gpus_per_worker": 1, "resources": {"M": 1}}
    )
    assert isinstance(options, RunOptions)
    assert (options.gpus, options.worker_resources, options.parallel) == (1, {"M": 1}, 1)  # parallel: fixed
    assert own.workers == 3 and own.strategy == "ddp"
    options, own = kind_of(ExperimentKind.HPO).sort({"search_space": {"x": 1}})
    assert options.gpus is None and own.trials == 32 and options.keep_checkpoints == 2


def test_adding_an_option_is_one_definition_the_magic_and_the_sorting_take_up():
    @dataclasses.dataclass(frozen=True)
    class Arguments:
        times: int = option(3, help="How many runs.", short="toy: how many runs", magic={"type": int})

    class Toy(Kind):
        name = "toy"
        arguments = Arguments

        def plan(self, fn, options, args):  # pragma: no cover - never run here
            raise AssertionError

        def resume(self, prior, plan, options):  # pragma: no cover
            raise AssertionError

    toy = Toy()
    parser = _parser((*registered(), toy))
    assert "--times" in [flag for a in parser._actions for flag in a.option_strings]
    options, own = toy.sort({"times": 5, "name": "n"})
    assert own.times == 5 and options.name == "n"
