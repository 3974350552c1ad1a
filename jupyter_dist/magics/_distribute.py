"""``%%distribute`` and ``%distribute_cluster``: a thin notebook layer over the Python API."""

from __future__ import annotations

import inspect
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import api
from ..experiment import ExperimentFailed
from ..runtime import _cluster
from ..space import Space, accepted_arguments

MODES_AVAILABLE = ("hpo",)
DEFAULT_TRIALS = 32
MODES_PLANNED = ("ablation", "ddp")


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


@magics_class
class DistributeMagics(Magics):
    @magic_arguments()
    @argument("kind", metavar="MODE", help="hpo (ablation and ddp are planned)")
    @argument(
        "--trials", type=int, default=None, help="number of trials (default 32; with --timeout: no limit)"
    )
    @argument("--metric", help="the metric to optimise, reported or returned by the function (required)")
    @argument("--mode", dest="direction", default="max", help="max or min (default max)")
    @argument("--sampler", default="tpe", help="tpe, random, grid, gp or cmaes (default tpe)")
    @argument("--pruner", default="asha", help="early stopping: asha (default), median, hyperband or none")
    @argument(
        "--max-steps", type=int, default=None, help="the most steps a trial reports (places ASHA rungs)"
    )
    @argument("--timeout", type=float, default=None, help="seconds for the whole experiment")
    @argument("--space", default=None, help="the search-space dict (default: the one the cell defines)")
    @argument("--fn", default=None, help="the training function (default: the one the cell defines)")
    @argument("--out", default="exp", help="variable to bind the finished Experiment to (default exp)")
    @argument("--cluster", default=None, help="'local' or a scheduler address, e.g. tcp://host:8786")
    @argument("--parallel", type=int, default=None, help="trials at once (default: the cluster's threads)")
    @argument("--name", default=None, help="experiment name (default: the function's name)")
    @argument("--seed", type=int, default=None, help="seed of the sampler")
    @cell_magic
    def distribute(self, line: str, cell: str):
        """Run the training function the cell defines as an experiment on Dask, live in the notebook.

        The cell body runs first, in the notebook's namespace; then its training function and search space are
        picked up and the experiment starts. The finished Experiment is bound to ``--out``.
        """
        args = parse_argstring(self.distribute, line)
        if args.kind in MODES_PLANNED:
            raise UsageError(f"%%distribute {args.kind} is not available yet; use %%distribute hpo")
        if args.kind not in MODES_AVAILABLE:
            raise UsageError(
                f"%%distribute {args.kind}: unknown mode; use one of {', '.join(MODES_AVAILABLE)}"
            )
        if not args.metric:
            raise UsageError("%%distribute hpo needs --metric NAME, the metric to optimise")
        if not args.out.isidentifier():
            raise UsageError(f"--out {args.out}: not a valid variable name")

        namespace = self.shell.user_ns
        before = {k: id(v) for k, v in namespace.items()}
        self.shell.ex(cell)
        new = _new_names(before, namespace)
        space = _pick_space(args, namespace, new)
        fn = _pick_function(args, namespace, new, space)

        try:
            exp = api.hpo(
                fn,
                space,
                trials=args.trials if args.trials is not None or args.timeout else DEFAULT_TRIALS,
                metric=args.metric,
                mode=args.direction,
                sampler=args.sampler,
                pruner=None if args.pruner == "none" else args.pruner,
                cluster=args.cluster,
                parallel=args.parallel,
                name=args.name,
                seed=args.seed,
                max_steps=args.max_steps,
                timeout=args.timeout,
                progress="auto",
            )
        except ExperimentFailed as exc:
            namespace[args.out] = exc.experiment  # what was recorded stays reachable
            raise
        namespace[args.out] = exp
        return exp

    @magic_arguments()
    @argument(
        "target", nargs="?", default=None, help="'local' or a scheduler address; none: show the cluster"
    )
    @argument("--workers", type=int, default=None, help="worker processes of the local cluster")
    @line_magic
    def distribute_cluster(self, line: str):
        """Show the cluster experiments run on, or choose it for the following cells.

        ``%distribute_cluster local --workers 4`` (re)starts the embedded cluster;
        ``%distribute_cluster tcp://host:8786`` connects to a running Dask scheduler.
        """
        args = parse_argstring(self.distribute_cluster, line)
        if args.target is None:
            client = _cluster.get_client()
        elif args.target == _cluster.LOCAL:
            if args.workers is not None:
                _cluster.close_local_cluster()
            client = _cluster.get_client(_cluster.LOCAL, n_workers=args.workers)
        else:
            client = _cluster.get_client(args.target)
        if args.target is not None:
            _cluster.set_default_cluster(args.target)
        return client
