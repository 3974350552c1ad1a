"""Population-based training as a kind: a population of members whose hyperparameters become schedules found
while training (population/_search.py decides, segment by segment)."""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._validate import check_metric, check_positive
from ..errors import ArgumentError, SearchSpaceError
from ..population import PopulationExperiment
from ..protocol import Direction, ExperimentKind, Objective
from ..space import is_space_function, validate_space
from ..store import ExperimentDefinition, InMemoryRecord
from ._base import Kind, MagicSpec, check_same_objective
from ._checks import check_gpus
from ._hpo import MAX_STEPS_SHORT, SPACE_SHORT
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._shared_arguments import METRIC_SHORT, MODE_MAGIC, MODE_SHORT, SEED_SHORT
from ._spec import option


@dataclass(frozen=True)
class PbtArguments:
    """``pbt()``'s own arguments."""

    search_space: dict[str, Any] = option(
        help="``{argument: space object or constant}``: the members' starting hyperparameters are sampled from "
        "it, and (unless ``mutations`` says otherwise) every searched argument is perturbed within its space.",
        short=SPACE_SHORT,
        flags=("--space",),
    )
    population: int = option(
        8,
        help="Members (at least 2). With fewer worker slots than members, the member furthest behind runs next.",
        short="pbt: members training at once (default 8)",
        magic={"type": int},
    )
    metric: str | None = option(
        None, help="The objective members are ranked by (their newest value of it).", short=METRIC_SHORT
    )
    mode: str = option("max", short=MODE_SHORT, magic=MODE_MAGIC, with_option="metric")
    perturbation_interval: int = option(
        4,
        help="Steps between a member's decisions: a segment ends at its first checkpoint of step k * interval - 1 "
        "(steps counted from 0, as ``report()`` numbers them) or later.",
        short="pbt: steps between a member's exploit/explore decisions (default 4)",
        magic={"type": int},
    )
    quantile: float = option(
        0.25,
        help="The fraction of members (by rank) that copy (the bottom) and are copied (the top), 0 < quantile <= "
        "0.5.",
        short="pbt: the bottom/top fraction that copies/is copied (0.25)",
        magic={"type": float},
    )
    resample_probability: float = option(
        0.25,
        help="The chance that explore draws a value afresh from its space instead of perturbing it (×0.8 or ×1.2 "
        "for numbers, a neighbouring option for a ``choice``).",
        short="pbt: chance that explore resamples a value instead of perturbing it (0.25)",
        magic={"type": float},
    )
    max_steps: int | None = option(
        None,
        help="The steps each member trains (required): a member ends once it has checkpointed step max_steps - 1.",
        short=MAX_STEPS_SHORT,
        magic={"type": int},
    )
    mutations: dict[str, Any] | None = option(
        None,
        help="``{argument: space object, list of options, or function returning a new value}``: what to perturb, "
        "and within what; default: every searched argument of ``search_space``.",
        short="pbt: a dict in the notebook of what to perturb (default: every searched argument)",
        variable=True,
    )
    seed: int | None = option(
        None,
        help="Seeds the starting points, the choice of donors and the perturbations, and each segment's Python "
        "``random``, NumPy and torch generators (from this seed, its member and its last step). None: one is "
        "drawn, and recorded (``exp.seed``).",
        short=SEED_SHORT,
        magic={"type": int},
    )
    workers_per_trial: int = option(
        1, help="k > 1 makes every member a k-rank data-parallel job (``prepare()`` inside the function)."
    )


class PopulationBasedTraining(Kind):
    name = ExperimentKind.PBT
    metric_for = "optimise"
    arguments = PbtArguments
    experiment_class = PopulationExperiment
    magic = MagicSpec(takes_space=True)

    def plan(self, fn: Callable, options: RunOptions, args: PbtArguments) -> TrialPlan:
        from ..population import Explorer, PopulationSearch, check_mutations

        check_metric(self.name, args.metric, self.metric_for)
        objective = Objective(args.metric, Direction.parse(args.mode), options.scope)
        if isinstance(args.population, bool) or not isinstance(args.population, int) or args.population < 2:
            raise ArgumentError(f"population={args.population!r}: give a whole number of members, at least 2")
        check_positive("perturbation_interval", args.perturbation_interval, optional=False)
        if args.max_steps is None:
            raise ArgumentError(
                "pbt() needs max_steps=, the steps each member trains (its budget): members are compared, "
                "copied and perturbed every perturbation_interval steps until then"
            )
        check_positive("max_steps", args.max_steps)
        _check_fraction("quantile", args.quantile, upper=0.5, open_low=True)
        _check_fraction("resample_probability", args.resample_probability, upper=1.0, open_low=False)
        check_positive("workers_per_trial", args.workers_per_trial, optional=False)
        check_gpus("gpus_per_trial", options.gpus)
        if options.gpus and args.workers_per_trial > 1:
            raise ArgumentError(
                "gpus_per_trial= places single-process members; it is not combined with workers_per_trial > 1: "
                "use one or the other"
            )
        if args.workers_per_trial > 1 and (options.max_failures or options.cpus_per_trial):
            raise ArgumentError(
                "max_failures= and cpus_per_trial= are for single-process members; with workers_per_trial > 1 "
                "each member is a data-parallel job: leave them out"
            )
        if is_space_function(args.search_space):
            raise SearchSpaceError(
                "pbt() perturbs the values of a dict search space within its space objects: give a dict, not a "
                "function space(trial)"
            )
        validate_space(fn, args.search_space)
        mutated = check_mutations(fn, args.search_space, args.mutations)
        check_checkpoints(fn)
        search = PopulationSearch(
            dict(args.search_space),
            population=args.population,
            objective=objective,
            perturbation_interval=args.perturbation_interval,
            quantile=args.quantile,
            max_steps=args.max_steps,
            explorer=Explorer(mutated, args.resample_probability, args.seed),
            seed=args.seed,
        )
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            dict(args.search_space),
            total=None,
            max_steps=args.max_steps,
            timeout=options.timeout,
            details={
                "population": args.population,
                "perturbation_interval": args.perturbation_interval,
                "quantile": args.quantile,
                "resample_probability": args.resample_probability,
                "mutations": {name: repr(how) for name, how in mutated.items()},
                "seed": args.seed,
                "workers_per_trial": args.workers_per_trial,
            },
        )
        if args.workers_per_trial == 1:
            return TrialPlan(definition, fn, search)
        from ..ddp import DataParallelTrial

        ranks = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
        return TrialPlan(definition, ranks, search, ranks=args.workers_per_trial)

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """Each member goes on from its newest checkpoint, with the hyperparameters of its last segment; a member
        that trained its budget, or failed, stays as it ended."""
        check_same_objective(prior, plan.definition.objective, options.name)
        stored = prior.definition.details
        given = plan.definition.details
        for setting in ("population", "perturbation_interval"):
            if stored.get(setting) != given.get(setting):
                raise ArgumentError(
                    f"{prior.definition.name!r} ran with {setting}={stored.get(setting)!r}; resume it with the "
                    f"same {setting}, not {given.get(setting)!r}"
                )
        from ..population import PopulationSearch

        assert isinstance(plan.source, PopulationSearch)  # the source plan() made
        plan.source.resume(prior.trial_records())
        continued = dataclasses.replace(
            prior.definition,
            max_steps=plan.definition.max_steps,
            timeout=plan.definition.timeout,
            details=given,
        )
        return dataclasses.replace(plan, definition=continued)


def _check_fraction(name: str, value: Any, *, upper: float, open_low: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not (0 < value if open_low else 0 <= value) or value > upper:
        low = "0 <" if open_low else "0 <="
        raise ArgumentError(f"{name}={value!r}: give a fraction, {low} {name} <= {upper}")


def check_checkpoints(fn: Callable) -> None:
    """Refuse a training function that never calls ``checkpoint()`` and ``restore()``: a member that copies a
    better one goes on from that member's checkpoint, and a member goes on from its own between segments."""
    names = _names_called(getattr(fn, "fn", fn))
    missing = [name for name in ("checkpoint", "restore") if name not in names]
    if missing:
        wanted = " and ".join(f"jupyter_dist.{name}()" for name in missing)
        raise ArgumentError(
            f"pbt(): {getattr(fn, '__name__', 'the training function')}() never calls {wanted}. A member goes on "
            "from a checkpoint at every perturbation interval (its own, or a better member's it copies), so "
            "the function must save its state with jupyter_dist.checkpoint(step, state) and start with "
            "jupyter_dist.restore(state) (see the checkpoints how-to)"
        )


def _names_called(fn: Any, depth: int = 2) -> set[str]:
    """The global and attribute names ``fn``'s code (its nested functions', and, ``depth`` deep, the notebook
    functions it calls by name) refers to."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return {"checkpoint", "restore"}  # not Python code we can read (a callable object): trust it
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    if depth > 1:
        scope = getattr(fn, "__globals__", {})
        for name in list(names):
            helper = scope.get(name)
            if inspect.isfunction(helper) and helper is not fn:
                names |= _names_called(helper, depth - 1)
    return names
