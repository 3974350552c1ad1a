"""The API reference (docs/api/) documents every public name, and its magic options tables list every option.

Fast checks on the sources, without a Sphinx build (the docs build test builds the site): every name of
``jupyter_dist.__all__`` and of the integrations' ``__all__`` has an autodoc directive on an API page, every
autodoc target there exists, and docs/_ext/magic_options.py's table of each magic has exactly the options of the
parser IPython's ``magic_arguments`` built for it (and of the parser ``%%distribute`` really parses with).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import pytest

import jupyter_dist

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import entry_point_options  # noqa: E402 - docs/_ext, put on the path above
import magic_options  # noqa: E402

# ".. autofunction:: jupyter_dist.hpo", ".. autoclass:: jupyter_dist.integrations.lightning.ReportCallback", in
# the {eval-rst} blocks of the pages; or MyST's ```{autoclass} jupyter_dist.X
DIRECTIVE = re.compile(r"(?:\.\.\s+|\{)auto(function|class|exception|module|data)(?:::|\})\s+([\w.]+)")
INTEGRATIONS = ("lightning", "transformers")


def _pages() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(API.glob("*.md"))}


def _documented() -> dict[str, str]:
    """Every autodoc target of the API pages, and the page documenting it."""
    targets: dict[str, str] = {}
    for page, text in _pages().items():
        for _, target in DIRECTIVE.findall(text):
            targets.setdefault(target, page)
    return targets


def _module_all(module: str) -> list[str]:
    """A module's ``__all__``, read from its source (an integration imports its framework when imported)."""
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{module} has no __all__")


def _classes(module: str) -> set[str]:
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    return {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef)}


def test_every_public_name_of_the_package_is_documented():
    documented = _documented()
    missing = [name for name in jupyter_dist.__all__ if f"jupyter_dist.{name}" not in documented]
    assert not missing, (
        f"in jupyter_dist.__all__ but on no docs/api/ page (add an autodoc directive): {missing}"
    )


@pytest.mark.parametrize("framework", INTEGRATIONS)
def test_every_public_class_of_the_integrations_is_documented(framework):
    module = f"jupyter_dist.integrations.{framework}"
    documented = _documented()
    missing = [name for name in _module_all(module) if f"{module}.{name}" not in documented]
    assert not missing, f"in {module}.__all__ but on no docs/api/ page: {missing}"


def test_the_pytorch_lightning_module_is_the_documented_lightning_one():
    # integrations.md documents jupyter_dist.integrations.lightning and says the pytorch_lightning module has the
    # same classes: it must.
    assert _module_all("jupyter_dist.integrations.pytorch_lightning") == _module_all(
        "jupyter_dist.integrations.lightning"
    )
    assert "jupyter_dist.integrations.pytorch_lightning" in _pages()["integrations.md"]


def test_every_autodoc_target_exists():
    stale = []
    for target in _documented():
        module, _, name = target.rpartition(".")
        if target == "jupyter_dist.space" or module == "jupyter_dist":
            if not hasattr(jupyter_dist, name):
                stale.append(target)
        elif module.startswith("jupyter_dist.integrations."):
            if name not in _classes(module) or name not in _module_all(module):
                stale.append(target)
        else:
            stale.append(f"{target} (document the public name, jupyter_dist.X)")
    assert not stale, f"docs/api/ documents names that are not public: {stale}"


def test_every_api_page_is_in_the_toctree():
    index = _pages()["index.md"]
    toctree = index.split("```{toctree}", 1)[1].split("```", 1)[0]
    entries = {line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")}
    pages = {name.removesuffix(".md") for name in _pages()} - {"index"}
    assert pages <= entries, f"API pages missing from docs/api/index.md's toctree: {pages - entries}"


# --- the magic options tables -------------------------------------------------------------------------------
MAGICS = ("distribute", "distribute_cluster")


def _options(actions) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(a.option_strings), a.dest) for a in actions if not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("magic", MAGICS)
def test_the_options_table_lists_every_option_of_the_magics_parser(magic):
    from jupyter_dist.magics import DistributeMagics

    parser = getattr(DistributeMagics, magic).parser
    rows = magic_options.option_rows(magic)
    assert [(row.flags, row.dest) for row in rows] == _options(parser._actions)
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    for row, action in zip(rows, actions, strict=True):
        assert row.help == action.help
        assert row.choices == (None if action.choices is None else tuple(map(str, action.choices)))
        for flag in action.option_strings:
            assert row.option.startswith(flag) or f", {flag}" in row.option
        if action.default is not None:
            assert row.default == str(action.default)
        else:
            assert row.default == magic_options.UNSET


def test_the_distribute_table_is_the_parser_the_magic_parses_with():
    # The magic parses with a parser built for the kinds registered when it runs (_parser): with the built-in
    # kinds, the same options as the one magic_arguments stored at import, which the table reads.
    from jupyter_dist.kinds import registered
    from jupyter_dist.magics._distribute import _parser

    rows = magic_options.option_rows("distribute")
    assert [(row.flags, row.dest) for row in rows] == _options(_parser(registered())._actions)


def test_the_distribute_table_says_which_modes_read_each_option():
    from jupyter_dist.kinds import registered

    names = {str(kind.name) for kind in registered()}
    rows = {row.flags or (row.dest,): row for row in magic_options.option_rows("distribute")}
    for row in rows.values():
        assert row.modes and set(row.modes) <= names, row
    assert rows[("kind",)].modes == tuple(str(kind.name) for kind in registered())
    assert rows[("--trials",)].modes == ("hpo",)
    assert rows[("--workers",)].modes == ("ddp",)
    assert "ddp" not in rows[("--parallel",)].modes  # refused by ddp (MagicSpec.refuses)
    assert all(row.modes is None for row in magic_options.option_rows("distribute_cluster"))


@pytest.mark.parametrize("magic", MAGICS)
def test_the_options_table_renders_one_row_per_option(magic):
    table = magic_options.options_table(magic)
    body = table.children[0].children[-1]  # tgroup > tbody
    rows = magic_options.option_rows(magic)
    assert len(body.children) == len(rows)
    ids = [line["ids"][0] for line in body.children]
    assert ids == [magic_options.row_id(magic, row) for row in rows]
    assert len(set(ids)) == len(ids)


def test_the_magics_page_has_both_tables():
    page = _pages()["magics.md"]
    for magic in MAGICS:
        assert f"```{{magic-options}} {magic}\n" in page
    assert "%load_ext jupyter_dist" in page
    for mode in ("hpo", "ablation", "ddp"):
        assert f"%%distribute {mode}" in page


# --- the entry points' arguments tables ---------------------------------------------------------------------
ENTRY_POINTS = tuple(entry_point_options.ENTRY_POINTS)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_the_arguments_table_has_every_argument_with_its_type_default_and_help(entry_point):
    import inspect

    signature = inspect.signature(getattr(jupyter_dist, entry_point))
    rows = entry_point_options.argument_rows(entry_point)
    assert [row.name.lstrip("*") for row in rows] == list(signature.parameters)
    for row in rows:
        parameter = signature.parameters[row.name.lstrip("*")]
        assert row.type and row.help, row
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            assert row.name == f"**{parameter.name}" and row.default == entry_point_options.NONE, row
            continue
        expected = "required" if parameter.default is inspect.Parameter.empty else repr(parameter.default)
        assert row.default == expected, row


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_the_arguments_table_names_the_magic_flag_that_sets_each_argument(entry_point):
    from jupyter_dist.magics import DistributeMagics

    magic_flags = {
        flag for action in DistributeMagics.distribute.parser._actions for flag in action.option_strings
    }
    for row in entry_point_options.argument_rows(entry_point):
        if row.name != "fn":
            assert set(row.flags) <= magic_flags, row


def test_the_experiments_page_has_each_entry_points_table():
    page = _pages()["experiments.md"]
    for entry_point in ENTRY_POINTS:
        assert f"```{{entry-point-options}} {entry_point}\n" in page
