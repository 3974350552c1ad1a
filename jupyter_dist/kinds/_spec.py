"""Each option of an experiment defined once: a dataclass field whose metadata (``Spec``) holds everything beyond
its name, type and default: the help the entry point's docstring shows, the ``%%distribute`` flag and its one-line
help, how the magic's string becomes the API's value, and, for the options every kind shares (``RunOptions``),
which kinds take it and under which name.

From these fields come ``RunOptions`` and each kind's own arguments (a dataclass per kind), the magic's parser,
and the entry points' ``Parameters`` (``entry_point_doc``). The entry points keep explicit signatures for IDEs
and ``help()``; tests/test_api_signatures.py checks them against the definitions.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Entry", "Spec", "entries", "option", "parameters_doc"]

SPEC = "jupyter_dist.spec"


@dataclass(frozen=True)
class Spec:
    """What an option is beyond its Python name, type and default."""

    help: str  # the entry point's docstring (numpydoc text, without the name)
    short: str | None = None  # the magic's help line; None: the magic does not offer it
    flags: tuple[str, ...] = ()  # the magic's flags; () : "--" and its entry-point name, dashed
    magic: Mapping[str, Any] = field(default_factory=dict)  # more of argparse's add_argument keywords
    # Another argument setting the same option (``--no-store``): (flags, add_argument keywords).
    also: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()
    variable: bool = False  # the magic's value names a notebook variable, looked up once the cell ran
    parse: Callable[[Any], Any] | None = None  # the magic's value as the entry point takes it
    # --- the options every kind shares (RunOptions): which kinds take it (None: all), under which name where
    # it is not the field's (by kind; "*": every kind), with which default where it is not the field's, and
    # what a kind says of it otherwise than the rest (by kind: this Spec's fields, e.g. {"ddp": {"help": ...}}).
    kinds: tuple[str, ...] | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    by_kind: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The docstring shows it under the option it names, as "metric, mode" (numpydoc's shared entry).
    with_option: str | None = None


def option(default: Any = dataclasses.MISSING, help: str = "", **spec: Any) -> Any:  # noqa: A002 - as add_argument
    """A dataclass field that is an option: ``option(32, help=..., short=..., magic={"type": int})``."""
    return field(default=default, metadata={SPEC: Spec(help, **spec)})


@dataclass(frozen=True)
class Entry:
    """One option as one kind's entry point and magic see it."""

    field: str  # the dataclass's field
    name: str  # the entry point's argument
    default: Any  # dataclasses.MISSING: required
    spec: Spec
    shared: bool  # a RunOptions field (else the kind's own argument)

    @property
    def help(self) -> str:
        return self.spec.help

    @property
    def flags(self) -> tuple[str, ...]:
        return self.spec.flags or ("--" + self.name.replace("_", "-"),)


def entries(cls: type, kind: str, shared: bool) -> list[Entry]:
    """The options of dataclass ``cls`` that ``kind`` takes, in field order."""
    found = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(SPEC)
        if spec is None or (spec.kinds is not None and kind not in spec.kinds):
            continue
        name = spec.names.get(kind) or spec.names.get("*") or f.name
        default = spec.defaults.get(kind, f.default)
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        if kind in spec.by_kind:
            spec = dataclasses.replace(spec, **spec.by_kind[kind])
        found.append(Entry(f.name, name, default, spec, shared))
    return found


def parameters_doc(found: list[Entry], order: list[str], before: dict[str, str] | None = None) -> str:
    """The numpydoc ``Parameters`` section of an entry point taking ``order`` (its signature's names) from the
    definitions ``found``: an option with no help of its own joins the one it names (``metric, mode``)."""
    by_name = {entry.name: entry for entry in found}
    joining: dict[str, list[Entry]] = {}
    for entry in found:
        if entry.spec.with_option and not entry.help:
            joining.setdefault(entry.spec.with_option, []).append(entry)
    lines = ["Parameters", "----------"]
    for name, text in (before or {}).items():
        lines.append(name)
        lines += _wrapped(text)
    for name in order:
        named = by_name.get(name)
        if named is None or not named.help:
            continue
        names = [named.name] + [e.name for e in joining.get(named.field, []) if e.name in order]
        lines.append(", ".join(names))
        lines += _wrapped(named.help)
    return textwrap.indent("\n".join(lines), "    ")


# The docstrings' lines, as the package's code is wrapped (ruff's line length, less the indentation).
WIDTH = 106


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(
        text, width=WIDTH, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
    )
