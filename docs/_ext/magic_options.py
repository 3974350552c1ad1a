"""The ``magic-options`` directive: a magic's options as a table, read from the magic's own argument parser.

In a MyST page::

    ```{magic-options} distribute
    ```

renders one row per option of ``%%distribute`` (``distribute_cluster`` for ``%distribute_cluster``): the option
(with the name of its value, as ``%%distribute?`` writes it), its default, its help text (and the values it
accepts, when the parser restricts them) and, for ``%%distribute``, the modes (the registered kinds) that read it. Everything comes from the parser IPython's ``magic_arguments`` stores on the magic (``.parser``) and
from the kinds' registry, so the table cannot disagree with the code.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

# What the Default column says for an option the magic leaves unset: the entry point's own default applies
# (its help text says which).
UNSET = "\N{EM DASH}"


@dataclass(frozen=True)
class OptionRow:
    """One option of a magic, as its table shows it."""

    option: str  # "--trials TRIALS", "--adapt MIN,MAX", "MODE" (a positional)
    flags: tuple[str, ...]  # its option strings; () for a positional
    dest: str  # the parser's name for it
    default: str
    help: str
    choices: tuple[str, ...] | None  # the values the parser accepts, when it restricts them
    modes: tuple[str, ...] | None  # the kinds that read it (%%distribute only)


def magic_function(name: str):
    """The function of the magic ``name`` (``distribute`` or ``distribute_cluster``), as ``DistributeMagics``
    defines it."""
    from jupyter_dist.magics import DistributeMagics

    fn = getattr(DistributeMagics, name, None)
    if fn is None or not hasattr(fn, "parser"):
        raise ValueError(f"{name!r} is not a magic of jupyter_dist with magic_arguments")
    return fn


def magic_parser(name: str) -> argparse.ArgumentParser:
    """The argparse parser IPython's ``magic_arguments`` built for the magic ``name``."""
    return magic_function(name).parser


def documented_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's actions that are options of the magic (its ``-h`` excepted)."""
    return [
        a for a in parser._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
    ]


def _invocation(action: argparse.Action) -> str:
    """The option as argparse's help writes it: its flags and, when it takes a value, the value's name (its
    metavar, else its dest in capitals)."""
    if not action.option_strings:
        return action.metavar or action.dest
    flags = ", ".join(action.option_strings)
    if action.nargs == 0:  # store_true / store_false
        return flags
    return f"{flags} {action.metavar or action.dest.upper()}"  # the choices go to the help column


def _default(action: argparse.Action) -> str:
    if action.default is None or action.default is argparse.SUPPRESS:
        return UNSET
    return str(action.default)


def _modes(name: str) -> dict[str, tuple[str, ...]] | None:
    """For ``%%distribute``: which registered kinds read each option (by the parser's dest), as the magic decides
    it: a kind reads every option but those it refuses as foreign (``_foreign``)."""
    if name != "distribute":
        return None
    from jupyter_dist.kinds import registered
    from jupyter_dist.magics._distribute import _foreign

    kinds = registered()
    foreign = {kind: set(_foreign(kind, kinds)) for kind in kinds}
    return {
        action.dest: tuple(str(kind.name) for kind in kinds if action.dest not in foreign[kind])
        for action in documented_actions(magic_parser(name))
    }


def option_rows(name: str) -> list[OptionRow]:
    """The table of the magic ``name``: one row per option of its parser, in the parser's order."""
    modes = _modes(name)
    return [
        OptionRow(
            option=_invocation(action),
            flags=tuple(action.option_strings),
            dest=action.dest,
            default=_default(action),
            help=action.help or "",
            choices=None if action.choices is None else tuple(map(str, action.choices)),
            modes=None if modes is None else modes.get(action.dest, ()),
        )
        for action in documented_actions(magic_parser(name))
    ]


def row_id(name: str, row: OptionRow) -> str:
    """The HTML id of an option's row, to link to: ``distribute-option-trials``, ``distribute-option-kind``
    (MODE), ``distribute-cluster-option-adapt``."""
    anchor = row.flags[0] if row.flags else row.dest
    return nodes.make_id(f"{name}-option-{anchor}")


def _entry(*children: nodes.Node) -> nodes.entry:
    entry = nodes.entry()
    entry += nodes.paragraph("", "", *children)
    return entry


def options_table(name: str) -> nodes.table:
    """The docutils table of ``option_rows(name)``; the help is plain text (never parsed as markup)."""
    rows = option_rows(name)
    with_modes = any(row.modes is not None for row in rows)
    # A magic that leaves every default to its entry point (the help says which) gets no column of dashes.
    with_default = any(row.default != UNSET for row in rows)
    headers = (
        ["Option"] + (["Default"] if with_default else []) + ["Help"] + (["Modes"] if with_modes else [])
    )
    widths = [28] + ([10] if with_default else []) + [52] + ([10] if with_modes else [])

    table = nodes.table(classes=["magic-options"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    header = nodes.row()
    for title in headers:
        header += _entry(nodes.Text(title))
    head += header
    body = nodes.tbody()
    group += body
    for row in rows:
        line = nodes.row(ids=[row_id(name, row)])
        line += _entry(nodes.literal(row.option, row.option))
        if with_default:
            default = (
                nodes.Text(row.default) if row.default == UNSET else nodes.literal(row.default, row.default)
            )
            line += _entry(default)
        help_text = [nodes.Text(row.help)]
        if row.choices:
            help_text.append(nodes.Text("; values: "))
            for i, choice in enumerate(row.choices):
                help_text += [nodes.Text(", ")] if i else []
                help_text.append(nodes.literal(choice, choice))
        line += _entry(*help_text)
        if with_modes:
            line += _entry(nodes.Text(", ".join(row.modes or ())))
        body += line
    return table


class MagicOptions(SphinxDirective):
    """``{magic-options} NAME``: the options table of the magic ``NAME``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0].lstrip("%")
        try:
            table = options_table(name)
        except Exception as exc:  # noqa: BLE001 - a warning naming the magic, not a traceback
            return [self.state.document.reporter.error(f"magic-options {name}: {exc}", line=self.lineno)]
        self.set_source_info(table)
        return [table]


def setup(app):
    app.add_directive("magic-options", MagicOptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
