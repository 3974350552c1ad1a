"""``%%distribute`` and ``%distribute_cluster``: a thin notebook layer over the Python API."""

from __future__ import annotations

import inspect
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

import jupyter_dist

from ..ddp import MIXED_PRECISIONS, STRATEGIES
from ..protocol import ExperimentKind
from ..space import Space, accepted_arguments

MODES_AVAILABLE = tuple(ExperimentKind)


def _new_names(before: dict[str, int], namespace: dict[str, Any]) -> list[str]:
    """Names the cell bound or rebound, in the order it bound them."""
    return [k for k, v in namespace.items() if not k.startswith("_") and before.get(k) != id(v)]


def _pick_space(args, namespace: dict[str, Any], new: list[str]) -> dict[str, Any]:
    if args.space:
        space = namespace.get(args.space)
        if not isinstance(space, dict):
            raise UsageError(f"--space {args.space}: no dict named {args.space!r} in the notebook")
        return space
    spaces = [
        n
        for n in new
        if isinstance(namespace[n], dict) and any(isinstance(v, Space) for v in namespace[n].values())
    ]
    if not spaces:
        raise UsageError(
            "the cell defines no search space: define a dict like {'lr': space.loguniform(1e-4, 1e-1)} "
            "in the cell, or name one with --space NAME"
        )
    if len(spaces) > 1:
        raise UsageError(
            f"the cell defines several search spaces ({', '.join(spaces)}); pick one with --space NAME"
        )
    return namespace[spaces[0]]


def _pick_function(args, namespace: dict[str, Any], new: list[str], space: dict[str, Any]):
    """The training function: --fn, or the one function the cell defines (among several, the one that takes
    every argument in ``space``)."""
    if args.fn:
        fn = namespace.get(args.fn)
        if not callable(fn):
            raise UsageError(f"--fn {args.fn}: no function named {args.fn!r} in the notebook")
        return fn
    # Functions the cell defined, not ones it imported (`from jupyter_dist import report`).
    here = namespace.get("__name__", "__main__")
    functions = [n for n in new if inspect.isfunction(namespace[n]) and namespace[n].__module__ == here]
    if not functions:
        raise UsageError(
            "the cell defines no training function: define it in the cell, or name it with --fn NAME"
        )
    if len(functions) > 1:
        # Helpers beside the training function are common: pick the one function that takes the whole space.
        fits = [n for n in functions if _accepts(namespace[n], space)]
        if len(fits) != 1:
            raise UsageError(
                f"the cell defines several functions ({', '.join(functions)}); "
                "name the training function with --fn NAME"
            )
        functions = fits
    return namespace[functions[0]]


def _accepts(fn, space: dict[str, Any]) -> bool:
    accepted = accepted_arguments(fn)
    return accepted is None or set(space) <= accepted


def _given(args, *names: str) -> dict[str, Any]:
    """The options the line gave: the API's own defaults stand for the rest (they are written there only)."""
    given = {name: getattr(args, name) for name in names + ("direction",) if getattr(args, name) is not None}
    if "direction" in given:  # --mode is stored as `direction`: MODE is the positional in the usage line
        given["mode"] = given.pop("direction")
    return given


def _comma_list(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _groups(specs: list[str] | None) -> dict[str, list[str]] | None:
    groups = {}
    for spec in specs or []:
        name, sep, members = spec.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--group {spec}: write it as NAME=component,component")
        groups[name.strip()] = _comma_list(members)
    return groups or None


# Options only some modes read; giving one to another mode is a mistake worth naming.
HPO_ONLY = ("trials", "sampler", "pruner", "max_steps", "space")
ABLATION_ONLY = ("features", "modules", "flags", "group", "repeats")
DDP_ONLY = ("workers", "gpus_per_worker", "backend", "strategy", "mixed_precision")
FOREIGN = {
    ExperimentKind.HPO: ABLATION_ONLY + DDP_ONLY,
    ExperimentKind.ABLATION: HPO_ONLY + DDP_ONLY,
    ExperimentKind.DDP: HPO_ONLY + ABLATION_ONLY + ("direction", "parallel", "seed", "gpus_per_trial"),
}


@magics_class
class DistributeMagics(Magics):
    @magic_arguments()
    @argument("kind", metavar="MODE", help="hpo, ablation or ddp")
    @argument(
        "--metric", help="the metric to optimise or compare, reported or returned by the function (required)"
    )
    @argument("--mode", dest="direction", default=None, help="max or min (default max)")
    @argument("--fn", default=None, help="the training function (default: the one the cell defines)")
    @argument("--out", default="exp", help="variable to bind the finished Experiment to (default exp)")
    @argument("--cluster", default=None, help="'local' or a scheduler address, e.g. tcp://host:8786")
    @argument("--parallel", type=int, default=None, help="trials at once (default: the cluster's threads)")
    @argument("--name", default=None, help="experiment name (default: the function's name)")
    @argument("--seed", type=int, default=None, help="hpo: seed of the sampler; ablation: seed of repeat 0")
    @argument(
        "--resume",
        action="store_true",
        default=None,
        help="continue the stored experiment --name (after a restart, a crash, a stop or a failure)",
    )
    @argument(
        "--checkpoint-dir",
        default=None,
        help="where jupyter_dist.checkpoint() saves (a path or fsspec URL; default: beside the store)",
    )
    @argument("--keep-checkpoints", type=int, default=None, help="checkpoints each trial keeps (default 2)")
    @argument(
        "--store", default=None, help="the experiment store file (default: JUPYTER_DIST_STORE or Jupyter's)"
    )
    @argument(
        "--no-store",
        dest="store",
        action="store_false",
        default=None,
        help="record this run in memory only, not in the store",
    )
    @argument("--timeout", type=float, default=None, help="seconds for the whole experiment")
    @argument(
        "--trials",
        type=int,
        default=None,
        help="hpo: number of trials (default 32; with --timeout: no limit)",
    )
    @argument("--sampler", default=None, help="hpo: tpe, random, grid, gp or cmaes (default tpe)")
    @argument("--pruner", default=None, help="hpo: asha (default), median, hyperband or none")
    @argument("--max-steps", type=int, default=None, help="hpo: the most steps a trial reports (ASHA rungs)")
    @argument("--space", default=None, help="hpo: the search-space dict (default: the one the cell defines)")
    @argument("--features", default=None, help="ablation: features to leave out, comma-separated")
    @argument(
        "--modules", default=None, help="ablation: modules (dotted names) to leave out, comma-separated"
    )
    @argument("--flags", default=None, help="ablation: boolean arguments to set False, comma-separated")
    @argument("--group", action="append", default=None, help="ablation: NAME=a,b leaves a and b out together")
    @argument("--repeats", type=int, default=None, help="ablation: runs per variant (default 1)")
    @argument("--workers", type=int, default=None, help="ddp: ranks, one per Dask worker (default 2)")
    @argument(
        "--gpus-per-trial",
        type=int,
        default=None,
        help="hpo, ablation: GPUs each trial holds, on workers declaring GPU resources",
    )
    @argument("--gpus-per-worker", type=float, default=None, help="ddp: GPUs per rank (default 0: CPU)")
    @argument("--backend", default=None, help="ddp: gloo or nccl (default: nccl with GPUs, else gloo)")
    @argument(
        "--strategy",
        default=None,
        choices=STRATEGIES,
        help="ddp: what prepare(model) does: ddp (each rank holds the model, default) or fsdp (a shard each)",
    )
    @argument(
        "--mixed-precision",
        default=None,
        choices=MIXED_PRECISIONS,
        help="ddp: bf16 or fp16: prepare(model)'s forward runs under autocast (default: full precision)",
    )
    @cell_magic
    def distribute(self, line: str, cell: str):
        """Run the training function the cell defines as an experiment on Dask, live in the notebook.

        The cell body runs first, in the notebook's namespace; then its training function (and, for hpo, its
        search space) is picked up and the experiment starts. The finished Experiment is bound to ``--out``.
        """
        args = parse_argstring(self.distribute, line)
        if args.kind not in MODES_AVAILABLE:
            raise UsageError(
                f"%%distribute {args.kind}: unknown mode; use one of {', '.join(MODES_AVAILABLE)}"
            )
        given = [name for name in FOREIGN[args.kind] if getattr(args, name) is not None]
        if given:
            options = ", ".join(
                "--" + {"direction": "mode"}.get(name, name).replace("_", "-") for name in given
            )
            raise UsageError(f"{options}: not an option of %%distribute {args.kind}")
        if not args.metric and args.kind != ExperimentKind.DDP:
            raise UsageError(
                f"%%distribute {args.kind} needs --metric NAME, the metric to {args.kind == ExperimentKind.HPO and 'optimise' or 'compare'}"
            )
        if not args.out.isidentifier():
            raise UsageError(f"--out {args.out}: not a valid variable name")
        args.groups = _groups(args.group)  # a malformed --group fails before the cell runs

        namespace = self.shell.user_ns
        before = {k: id(v) for k, v in namespace.items()}
        self.shell.ex(cell)
        new = _new_names(before, namespace)
        run = {
            ExperimentKind.HPO: self._hpo,
            ExperimentKind.ABLATION: self._ablation,
            ExperimentKind.DDP: self._ddp,
        }[args.kind]
        try:
            exp = run(args, namespace, new)
        except jupyter_dist.ExperimentFailed as exc:
            namespace[args.out] = exc.experiment  # what was recorded stays reachable
            raise
        namespace[args.out] = exp
        # A view drawn in the cell (the JupyterLab extension's, or the widget) already ends with the trials table,
        # and an ablation study's with its summary table and chart: the view is the Experiment's display, and
        # showing it again below would repeat the table. Elsewhere (terminal IPython) the Experiment is shown.
        from ..widgets import resolve

        shown_in_cell = resolve("auto", exp.record.stored) in ("lab", "widget")
        return None if args.kind == ExperimentKind.ABLATION or shown_in_cell else exp

    def _hpo(self, args, namespace: dict[str, Any], new: list[str]):
        space = _pick_space(args, namespace, new)
        fn = _pick_function(args, namespace, new, space)
        options = _given(
            args,
            "metric",
            "sampler",
            "parallel",
            "name",
            "seed",
            "max_steps",
            "timeout",
            "cluster",
            "store",
            "resume",
            "gpus_per_trial",
            "checkpoint_dir",
            "keep_checkpoints",
        )
        if args.trials is not None or args.timeout is not None:
            options["trials"] = args.trials  # --timeout without --trials: as many trials as fit in the time
        if args.pruner is not None:
            options["pruner"] = None if args.pruner == "none" else args.pruner
        return jupyter_dist.hpo(fn, space, progress="auto", **options)

    def _ddp(self, args, namespace: dict[str, Any], new: list[str]):
        fn = _pick_function(args, namespace, new, {})
        options = _given(
            args,
            "workers",
            "gpus_per_worker",
            "backend",
            "strategy",
            "mixed_precision",
            "cluster",
            "timeout",
            "name",
            "metric",
            "store",
            "resume",
            "checkpoint_dir",
            "keep_checkpoints",
        )
        return jupyter_dist.data_parallel(fn, progress="auto", **options)

    def _ablation(self, args, namespace: dict[str, Any], new: list[str]):
        features, flags = _comma_list(args.features), _comma_list(args.flags)
        needs = dict.fromkeys((["features"] if features else []) + (flags or []))
        fn = _pick_function(args, namespace, new, needs)
        options = _given(
            args,
            "metric",
            "repeats",
            "cluster",
            "name",
            "seed",
            "parallel",
            "timeout",
            "store",
            "resume",
            "gpus_per_trial",
            "checkpoint_dir",
            "keep_checkpoints",
        )
        return jupyter_dist.ablation(
            fn,
            features=features,
            modules=_comma_list(args.modules),
            flags=flags,
            groups=args.groups,
            progress="auto",
            **options,
        )

    @magic_arguments()
    @argument(
        "target",
        nargs="?",
        default=None,
        help="'local', 'gateway' or a scheduler address (tcp://, tls://); none: show the cluster",
    )
    @argument(
        "--workers", type=int, default=None, help="worker processes of the local cluster; gateway workers"
    )
    @argument(
        "--adapt",
        default=None,
        metavar="MIN,MAX",
        help="a gateway cluster adapts between MIN and MAX workers",
    )
    @line_magic
    def distribute_cluster(self, line: str):
        """Show the cluster experiments run on, or choose it for the following cells.

        ``%distribute_cluster`` shows it (kind, name, workers, threads, memory, GPUs, dashboard);
        ``%distribute_cluster local --workers 4`` (re)starts the embedded cluster;
        ``%distribute_cluster gateway --workers 8`` or ``--adapt 0,20`` uses (and sizes) a Dask Gateway cluster;
        ``%distribute_cluster tcp://host:8786`` connects to a running Dask scheduler.
        """
        args = parse_argstring(self.distribute_cluster, line)
        if args.target is not None or args.workers is not None or args.adapt is not None:
            jupyter_dist.use_cluster(args.target, workers=args.workers, adapt=args.adapt)
        return jupyter_dist.cluster_info()
