"""A failed trial's traceback in the user's terms: their cell or file, line and source, without jupyter_dist's own
frames.

Two halves. On the worker (``trial_traceback``, called where the runner formats a failure) jupyter_dist's frames
are dropped, and the frames of functions cloudpickle sent by value (those defined in a notebook or in the script
being run) are named by their function and first line: cloudpickle replaces their file name with
``<dynamic-code>`` and the worker has no source for them. In the kernel (``in_user_terms``, as the record takes
the outcome) those frames are found again among the notebook's cells (IPython keeps each cell's source in
linecache) or in the script, and written as IPython writes its own: ``Cell In[3], line 5, in train`` and the
source line.

The package's frames are kept with dask config ``jupyter_dist.full-tracebacks: true`` or the environment variable
``JUPYTER_DIST_FULL_TRACEBACKS=1``, read on the workers (the embedded cluster's workers take the kernel's config
and environment when they start).
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

__all__ = ["full_tracebacks", "in_user_terms", "trial_traceback", "where_it_failed"]

PACKAGE_DIR = str(Path(__file__).resolve().parent)
DYNAMIC = "<dynamic-code>"
# A frame of a function sent by value, as the worker writes it: its qualified name and first line.
MARKED = re.compile(
    r'^(?P<indent> *)File "<dynamic-code:(?P<qualname>.+):(?P<first>\d+)>", line (?P<line>\d+), in (?P<name>.+)$'
)


def full_tracebacks() -> bool:
    """Whether jupyter_dist's own frames stay in a trial's traceback."""
    env = os.environ.get("JUPYTER_DIST_FULL_TRACEBACKS", "")
    if env:
        return env.strip().lower() not in {"0", "false", "no", "off"}
    import dask

    return bool(dask.config.get("jupyter_dist.full-tracebacks", False))


def trial_traceback(exc: BaseException) -> str:
    """``exc`` (being handled on a worker) as traceback text, chained exceptions included: without jupyter_dist's
    frames unless ``full_tracebacks()``, and with functions sent by value marked for ``in_user_terms``."""
    full = full_tracebacks()
    te = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    pairs = [(te, exc)]
    while pairs:
        te_now, exc_now = pairs.pop()
        if id(exc_now) in seen:
            continue
        seen.add(id(exc_now))
        te_now.stack = _user_frames(te_now.stack, exc_now.__traceback__, full)
        for te_next, exc_next in (
            (te_now.__cause__, exc_now.__cause__),
            (te_now.__context__, exc_now.__context__),
        ):
            if te_next is not None and exc_next is not None:
                pairs.append((te_next, exc_next))
    return "".join(te.format())


def _user_frames(stack: traceback.StackSummary, tb, full: bool) -> traceback.StackSummary:
    frames = list(stack)
    codes = [frame.f_code for frame, _ in traceback.walk_tb(tb)]
    if len(codes) == len(frames):
        for frame, code in zip(frames, codes, strict=True):
            if frame.filename == DYNAMIC:
                frame.filename = (
                    f"<dynamic-code:{getattr(code, 'co_qualname', code.co_name)}:{code.co_firstlineno}>"
                )
    if not full:
        kept = [f for f in frames if not _in_package(f.filename)]
        frames = kept or frames  # a failure inside jupyter_dist alone keeps its frames: they are all there is
    return traceback.StackSummary.from_list(frames)


def _in_package(filename: str) -> bool:
    try:
        return os.path.commonpath([PACKAGE_DIR, str(Path(filename).resolve())]) == PACKAGE_DIR
    except ValueError:  # "<string>", another drive
        return False


# --- in the kernel ---------------------------------------------------------------------------------------------
def in_user_terms(error: str | None) -> str | None:
    """A trial's traceback from ``trial_traceback`` with each function sent by value shown where the user wrote
    it: the notebook cell (``Cell In[3], line 5, in train``), newest first, or the script's file, with the source
    line. A function found nowhere keeps cloudpickle's ``<dynamic-code>``."""
    if not error or "<dynamic-code:" not in error:
        return error
    out = []
    for line in error.splitlines(keepends=True):
        found = MARKED.match(line.rstrip("\n"))
        if found is None:
            out.append(line)
            continue
        indent, first, lineno, name = found["indent"], int(found["first"]), int(found["line"]), found["name"]
        where = _where_defined(found["qualname"].rsplit(".", 1)[-1], first)
        if where is None:
            out.append(f'{indent}File "{DYNAMIC}", line {lineno}, in {name}\n')
            continue
        label, filename = where
        out.append(f"{indent}{label}, line {lineno}, in {name}\n")
        source = linecache.getline(filename, lineno).strip()
        if source:
            out.append(f"{indent}  {source}\n")
    return "".join(out)


def _where_defined(name: str, first: int) -> tuple[str, str] | None:
    """The label and file of the newest cell (or the script) defining function ``name`` at line ``first``."""
    for label, filename in _user_files():
        if (name, first) in _definitions(filename, _source(filename)):
            return label, filename
    return None


def _user_files() -> list[tuple[str, str]]:
    """Where functions sent by value come from: the notebook's cells, newest first, then the script being run."""
    files = []
    # Only when IPython is already there (a notebook, IPython): this module must not bring it in.
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    compiler: Any = getattr(shell, "compile", None)  # IPython's cell compiler, read by name only
    cells = getattr(compiler, "_filename_map", None) or {}
    for filename, count in sorted(cells.items(), key=lambda item: -item[1]):
        label = compiler.format_code_name(filename) if hasattr(compiler, "format_code_name") else None
        files.append((" ".join(label) if label else f"Cell In[{count}]", filename))
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if main:
        files.append((f'File "{main}"', main))
    return files


def _source(filename: str) -> str:
    return "".join(linecache.getlines(filename))


@functools.lru_cache(maxsize=256)
def _definitions(filename: str, source: str) -> frozenset[tuple[str, int]]:
    """The functions ``source`` defines, as (name, first line) the way a code object counts it (decorators
    included)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.add((node.name, first))
        elif isinstance(node, ast.Lambda):
            found.add(("<lambda>", node.lineno))
    return frozenset(found)


FRAME = re.compile(r"^ *(?P<where>(Cell In\[\d+\]|File \"[^\"]+\"), line \d+), in .+$")


def where_it_failed(error: str | None) -> str | None:
    """The innermost frame of a traceback in a line: ``Cell In[3], line 5: return x / 0`` (None if it has none)."""
    lines = (error or "").splitlines()
    for i in range(len(lines) - 1, -1, -1):
        found = FRAME.match(lines[i])
        if found:
            source = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
            return f"{found['where']}: {source}" if source else found["where"]
    return None
