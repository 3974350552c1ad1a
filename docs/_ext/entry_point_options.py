"""The ``entry-point-options`` directive: an entry point's arguments as a table, from their one definition.

In a MyST page::

    ```{entry-point-options} hpo
    ```

renders one row per argument of ``jupyter_dist.hpo`` (``pbt``, ``ablation``, ``data_parallel``): its name, its
type (the signature's annotation), its default, the ``%%distribute`` flag that sets it, and its help. The help and
the flags come from the kinds' option definitions (``jupyter_dist.kinds``: a dataclass field per option, whose
metadata the docstrings and the magic's parser are made from), the type and the default from the signature, so
the table cannot disagree with the code; the help is numpydoc text, parsed as reStructuredText.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.util.docutils import SphinxDirective

# The entry points and the kind each runs.
ENTRY_POINTS = {"hpo": "hpo", "pbt": "pbt", "ablation": "ablation", "data_parallel": "ddp"}
NO_FLAG = NONE = "\N{EM DASH}"
KEYWORDS_HELP = "The training function's own arguments: every rank calls ``fn(**kwargs_for_train)``."


@dataclass(frozen=True)
class ArgumentRow:
    """One argument of an entry point, as its table shows it."""

    name: str
    type: str
    default: str  # "required" for an argument without one
    flags: tuple[str, ...]  # the %%distribute flags that set it; () when the magic does not offer it
    help: str  # reStructuredText


def _type(annotation: object) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return text.replace("typing.", "").replace("collections.abc.", "")


def argument_rows(entry_point: str) -> list[ArgumentRow]:
    """Every argument of ``jupyter_dist.<entry_point>``, in the signature's order."""
    import jupyter_dist
    from jupyter_dist.api import FN_HELP
    from jupyter_dist.kinds import kind_of

    kind = kind_of(ENTRY_POINTS[entry_point])
    found = {entry.name: entry for entry in kind.entries()}
    rows = []
    for name, parameter in inspect.signature(getattr(jupyter_dist, entry_point)).parameters.items():
        entry = found.get(name)
        if entry is None:  # fn: the one argument that is no option
            rows.append(
                ArgumentRow(
                    name, _type(parameter.annotation), "required", ("(the cell's function)",), FN_HELP
                )
            )
            continue
        help_text = entry.help or (f"See ``{entry.spec.with_option}``." if entry.spec.with_option else "")
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # data_parallel(fn, **kwargs_for_train)
            rows.append(ArgumentRow(f"**{name}", _type(parameter.annotation), NONE, (), KEYWORDS_HELP))
            continue
        default = "required" if entry.default is dataclasses.MISSING else repr(parameter.default)
        flags = entry.flags if entry.spec.short is not None else ()
        rows.append(ArgumentRow(name, _type(parameter.annotation), default, flags, help_text))
    return rows


def row_id(entry_point: str, name: str) -> str:
    """The HTML id of an argument's row, to link to: ``hpo-argument-trials``."""
    return nodes.make_id(f"{entry_point}-argument-{name.lstrip('*')}")


class EntryPointOptions(SphinxDirective):
    """``{entry-point-options} NAME``: the arguments table of ``jupyter_dist.NAME``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            rows = argument_rows(name)
        except Exception as exc:  # noqa: BLE001 - a warning naming the entry point, not a traceback
            return [
                self.state.document.reporter.error(f"entry-point-options {name}: {exc}", line=self.lineno)
            ]
        # A list-table in reStructuredText, so the help's ``code`` and roles render as they do in the docstrings.
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 16 18 12 14 40",
            f"   :class: entry-point-options {name}-arguments",
            "",
            "   * - Argument",
            "     - Type",
            "     - Default",
            "     - ``%%distribute``",
            "     - Help",
        ]
        for row in rows:
            flags = ", ".join(f"``{flag}``" for flag in row.flags) if row.flags else NO_FLAG
            flags = flags.replace("``(the cell's function)``", "the cell's function")
            lines += [
                f"   * - ``{row.name}``",
                f"     - ``{row.type}``" if row.type else "     -",
                f"     - ``{row.default}``"
                if row.default not in ("required", NONE)
                else f"     - {row.default}",
                f"     - {flags}",
                f"     - {row.help}",
            ]
        # The page is Markdown (MyST): the table is parsed as reStructuredText in a document of its own, with
        # this one's settings (Sphinx's environment, so the help's roles resolve), and its nodes moved here.
        document = new_document(f"entry-point-options {name}", self.state.document.settings)
        Parser().parse("\n".join(lines), document)
        table = next(iter(document.findall(nodes.table)))
        for line, row in zip(list(table.findall(nodes.row))[1:], rows, strict=True):
            line["ids"].append(row_id(name, row.name))
        container = nodes.container(classes=["entry-point-options"])
        container += document.children
        return [container]


def setup(app):
    app.add_directive("entry-point-options", EntryPointOptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
