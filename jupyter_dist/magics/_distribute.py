"""``%%distribute`` and ``%distribute_cluster``: a thin notebook layer over the Python API.

``%%distribute MODE`` runs an experiment of the kind MODE names (hpo, pbt, ablation, ddp): the registered kinds
(jupyter_dist/kinds/) say which options each reads (each option defined once, there) and what the cell must
define; the magic runs the kind as its entry point would.
In the code the MODE is the experiment's ``kind``, and ``--mode`` (max or min) its ``direction``.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser, argument, magic_arguments, parse_argstring
from IPython.utils.process import arg_split

from .._orchestrate import run_kind
from ..cluster import cluster_info, use_cluster
from ..errors import ArgumentError, ExperimentFailed
from ..kinds import Entry, Kind, registered
from ._cell import new_names, pick_function, pick_space, pick_variable

# The magic's own options (the rest are the kinds', each defined once with its kind: jupyter_dist/kinds/_spec.py).
CELL_ARGUMENTS = (
    argument("--fn", default=None, help="the training function (default: the one the cell defines)"),
    argument("--out", default="exp", help="variable to bind the finished Experiment to (default exp)"),
)


def _offered(kind: Kind) -> list[Entry]:
    """The options of ``kind`` that the magic offers (those with a one-line help)."""
    return [entry for entry in kind.entries() if entry.spec.short is not None]


def _arguments(kinds: tuple[Kind, ...]) -> list[argument]:
    """The magic's arguments: MODE, its own, then each kind's options in the order kinds registered (an option
    several kinds take, once)."""
    names = [str(kind.name) for kind in kinds]
    listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
    arguments = [argument("kind", metavar="MODE", help=listed), *CELL_ARGUMENTS]
    seen = set()
    for kind in kinds:
        for entry in _offered(kind):
            if entry.name in seen:
                continue
            seen.add(entry.name)
            spec = entry.spec
            arguments.append(
                argument(*entry.flags, dest=entry.name, default=None, help=spec.short, **spec.magic)
            )
            arguments += [
                argument(*flags, dest=entry.name, default=None, **more) for flags, more in spec.also
            ]
    return arguments


def _with_kind_options(magic):
    """Decorate the magic with the arguments of the kinds registered now, as @argument lines would (IPython
    builds the magic's help, ``%%distribute?``, from them)."""
    for arg in reversed(_arguments(registered())):
        magic = arg(magic)
    return magic_arguments()(magic)


class _Parser(MagicArgumentParser):
    """The magic's parser, whose refusal of an option it does not know names the nearest one it does."""

    def parse_argstring(self, argstring, *, partial=False):
        self._argv = arg_split(argstring, strict=not partial)
        return super().parse_argstring(argstring, partial=partial)

    def error(self, message: str):
        known = [flag for action in self._actions for flag in action.option_strings]
        unknown = [a.split("=", 1)[0] for a in getattr(self, "_argv", []) if a.startswith("-")]
        hints = []
        for option in unknown:
            if option not in known:
                # options share their "--": only a near spelling is a hint (--progress is not --workers)
                close = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
                if close:
                    hints.append(f"{option}: did you mean {close[0]}?")
        raise UsageError("; ".join([*hints, message]) if hints else message)


def _did_you_mean(word: str, choices: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for the choice nearest a misspelt ``word``, or nothing."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@functools.lru_cache(maxsize=8)
def _parser(kinds: tuple[Kind, ...]) -> MagicArgumentParser:
    """The parser for the kinds registered now: a kind registered after the magic was defined brings its
    options too."""
    parser = _Parser("distribute")
    for arg in _arguments(kinds):
        arg.add_to_parser(parser, None)
    return parser


def _foreign(kind: Kind, kinds: tuple[Kind, ...]) -> list[str]:
    """The options ``kind`` does not read, as the parser names them (their dests), in the parser's order."""
    own = {entry.name for entry in _offered(kind)}
    offered = [entry.name for k in kinds for entry in _offered(k)]
    return [name for name in dict.fromkeys(offered) if name not in own]


def _given(args, kind: Kind) -> dict[str, Any]:
    """The options the line gave that ``kind`` reads, by their entry-point names: the options' own defaults
    stand for the rest."""
    return {e.name: getattr(args, e.name) for e in _offered(kind) if getattr(args, e.name) is not None}


def _flag(parser: MagicArgumentParser, dest: str) -> str:
    return next(a.option_strings[0] for a in parser._actions if a.dest == dest and a.option_strings)


@magics_class
class DistributeMagics(Magics):
    @_with_kind_options
    @cell_magic
    def distribute(self, line: str, cell: str):
        """Run the training function the cell defines as an experiment on Dask, live in the notebook.

        The cell body runs first, in the notebook's namespace; then its training function (and, for hpo, its
        search space) is picked up and the experiment starts. The finished Experiment is bound to ``--out``.
        """
        kinds = registered()
        parser = _parser(kinds)
        args = parser.parse_argstring(line)
        kind = next((k for k in kinds if k.name == args.kind), None)
        if kind is None:
            names = [str(k.name) for k in kinds]
            raise UsageError(
                f"%%distribute {args.kind}: unknown mode{_did_you_mean(args.kind, names)}; use one of "
                f"{', '.join(names)}"
            )
        foreign = [name for name in _foreign(kind, kinds) if getattr(args, name) is not None]
        if foreign:
            flags = ", ".join(_flag(parser, name) for name in foreign)
            raise UsageError(f"{flags}: not an option of %%distribute {args.kind}")
        if not args.metric and kind.metric_for:
            raise UsageError(f"%%distribute {args.kind} needs --metric NAME, the metric to {kind.metric_for}")
        if not args.out.isidentifier():
            raise UsageError(f"--out {args.out}: not a valid variable name")
        given = _given(args, kind)
        space_name = given.pop("search_space", None) if kind.magic.takes_space else None
        try:
            arguments = kind.magic_arguments(given)  # a malformed option fails before the cell runs
        except ArgumentError as exc:
            raise UsageError(str(exc)) from None

        from ..widgets import say_busy_while_the_cell_runs

        say_busy_while_the_cell_runs()  # the body may import torch for seconds before the experiment shows
        assert self.shell is not None  # a magic runs in the shell that registered it
        namespace = self.shell.user_ns
        before = {k: id(v) for k, v in namespace.items()}
        self._run_body(cell)
        new = new_names(before, namespace)
        for name in (e.name for e in _offered(kind) if e.spec.variable and e.name in arguments):
            arguments[name] = pick_variable(name, arguments[name], namespace)
        if kind.magic.takes_space:
            arguments["search_space"] = pick_space(space_name, namespace, new)
            fn = pick_function(args.fn, namespace, new, arguments["search_space"])
        else:
            fn = pick_function(args.fn, namespace, new, kind.magic_needs(arguments))
        options, kind_arguments = kind.sort({**arguments, "progress": "auto"})
        try:
            exp = run_kind(kind, fn, options, kind_arguments)
        except ExperimentFailed as exc:
            namespace[args.out] = exc.experiment  # what was recorded stays reachable
            raise
        namespace[args.out] = exp
        # A view drawn in the cell (the JupyterLab extension's, or the widget) already ends with the trials table,
        # and an ablation study's with its summary table and chart: the view is the Experiment's display, and
        # showing it again below would repeat the table. Elsewhere (terminal IPython) the Experiment is shown.
        from ..widgets import resolve

        shown_in_cell = resolve("auto", exp.record.stored) in ("lab", "widget")
        return None if kind.magic.view_shows_summary or shown_in_cell else exp

    def _run_body(self, cell: str) -> None:
        """Run the cell's body in the notebook's namespace, compiled as the cell it is (its lines numbered as the
        cell shows them, the magic's line first): a traceback, and a failed trial's (rewritten in the kernel,
        jupyter_dist/_tracebacks.py), then names it ``Cell In[N]`` with the source line, not ``<string>``."""
        shell = self.shell
        assert shell is not None  # a magic runs in the shell that registered it
        source = "\n" + cell
        # The cell running now is the one IPython cached last (its execution_count has already moved on in
        # IPython 9, not in earlier versions).
        cached = getattr(shell.compile, "_filename_map", None) or {}  # IPython's, not public: guarded
        number = next(reversed(cached.values()), shell.execution_count)
        filename = shell.compile.cache(source, number)
        with shell.builtin_trap:
            exec(compile(source, filename, "exec"), shell.user_global_ns, shell.user_ns)  # noqa: S102 - the user's cell

    @magic_arguments()
    @argument(
        "target",
        nargs="?",
        default=None,
        help="'local', 'gateway', 'slurm' or a scheduler address (tcp://, tls://); none: show the cluster",
    )
    @argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of the local cluster; gateway or Slurm workers",
    )
    @argument(
        "--adapt",
        default=None,
        metavar="MIN,MAX",
        help="a gateway or Slurm cluster adapts between MIN and MAX workers",
    )
    @line_magic
    def distribute_cluster(self, line: str):
        """Show the cluster experiments run on, or choose it for the following cells.

        ``%distribute_cluster`` shows it (kind, name, workers, threads, memory, GPUs, dashboard);
        ``%distribute_cluster local --workers 4`` (re)starts the embedded cluster;
        ``%distribute_cluster gateway --workers 8`` or ``--adapt 0,20`` uses (and sizes) a Dask Gateway cluster;
        ``%distribute_cluster slurm --workers 4`` (or ``--adapt 0,20``) a Slurm cluster of worker jobs;
        ``%distribute_cluster tcp://host:8786`` connects to a running Dask scheduler.
        """
        args = parse_argstring(self.distribute_cluster, line)
        if args.target is not None or args.workers is not None or args.adapt is not None:
            use_cluster(args.target, workers=args.workers, adapt=args.adapt)
        return cluster_info()
