"""Population-based training as a kind: a population of members whose hyperparameters become schedules found
while training (search/_population.py decides, segment by segment)."""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable
from typing import Any

from .._validate import check_metric, check_positive
from ..errors import ArgumentError, SearchSpaceError
from ..experiment import Experiment
from ..protocol import Direction, ExperimentKind, Objective
from ..space import is_space_function, validate_space
from ..store import ExperimentDefinition, ExperimentRecord, InMemoryRecord
from ..trials import TrialSource
from ._base import Kind, MagicSpec, check_same_objective, option
from ._control import CALLBACKS, TARGET
from ._hpo import MAX_STEPS, SPACE
from ._options import RunOptions, TrialPlan
from ._runtime_options import TRIAL_RUNTIME_OPTIONS, runtime_arguments


class PopulationBasedTraining(Kind):
    name = ExperimentKind.PBT
    metric_for = "optimise"
    magic = MagicSpec(
        options=(
            option("--population", type=int, help="pbt: members training at once (default 8)"),
            option(
                "--perturbation-interval",
                type=int,
                help="pbt: steps between a member's exploit/explore decisions (default 4)",
            ),
            option(
                "--quantile", type=float, help="pbt: the bottom/top fraction that copies/is copied (0.25)"
            ),
            option(
                "--resample-probability",
                type=float,
                help="pbt: chance that explore resamples a value instead of perturbing it (0.25)",
            ),
            option(
                "--mutations",
                variable=True,
                help="pbt: a dict in the notebook of what to perturb (default: every searched argument)",
            ),
            SPACE,
            MAX_STEPS,
            CALLBACKS,
            TARGET,
            *TRIAL_RUNTIME_OPTIONS,
        ),
        takes_space=True,
    )

    def plan(
        self,
        fn: Callable,
        options: RunOptions,
        *,
        search_space: dict[str, Any],
        population: int,
        metric: str | None,
        mode: str,
        perturbation_interval: int,
        quantile: float,
        resample_probability: float,
        max_steps: int | None,
        mutations: dict[str, Any] | None,
        seed: int | None,
        workers_per_trial: int,
    ) -> TrialPlan:
        from ..search import Explorer, PopulationSearch, check_mutations

        check_metric(self.name, metric, self.metric_for)
        objective = Objective(metric, Direction.parse(mode), options.scope)
        if isinstance(population, bool) or not isinstance(population, int) or population < 2:
            raise ArgumentError(f"population={population!r}: give a whole number of members, at least 2")
        check_positive("perturbation_interval", perturbation_interval, optional=False)
        if max_steps is None:
            raise ArgumentError(
                "pbt() needs max_steps=, the steps each member trains (its budget): members are compared, "
                "copied and perturbed every perturbation_interval steps until then"
            )
        check_positive("max_steps", max_steps)
        _check_fraction("quantile", quantile, upper=0.5, open_low=True)
        _check_fraction("resample_probability", resample_probability, upper=1.0, open_low=False)
        check_positive("workers_per_trial", workers_per_trial, optional=False)
        check_positive("gpus_per_trial", options.gpus)
        if options.gpus and workers_per_trial > 1:
            raise ArgumentError(
                "gpus_per_trial= places single-process members; it is not combined with workers_per_trial > 1: "
                "use one or the other"
            )
        if workers_per_trial > 1 and (options.max_failures or options.cpus_per_trial):
            raise ArgumentError(
                "max_failures= and cpus_per_trial= are for single-process members; with workers_per_trial > 1 "
                "each member is a data-parallel job: leave them out"
            )
        if is_space_function(search_space):
            raise SearchSpaceError(
                "pbt() perturbs the values of a dict search space within its space objects: give a dict, not a "
                "function space(trial)"
            )
        validate_space(fn, search_space)
        mutated = check_mutations(fn, search_space, mutations)
        check_checkpoints(fn)
        search = PopulationSearch(
            dict(search_space),
            population=population,
            objective=objective,
            perturbation_interval=perturbation_interval,
            quantile=quantile,
            max_steps=max_steps,
            explorer=Explorer(mutated, resample_probability, seed),
            seed=seed,
        )
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            dict(search_space),
            total=None,
            max_steps=max_steps,
            timeout=options.timeout,
            details={
                "population": population,
                "perturbation_interval": perturbation_interval,
                "quantile": quantile,
                "resample_probability": resample_probability,
                "mutations": {name: repr(how) for name, how in mutated.items()},
                "seed": seed,
                "workers_per_trial": workers_per_trial,
            },
        )
        if workers_per_trial == 1:
            return TrialPlan(definition, fn, search)
        from ..ddp import DataParallelTrial

        ranks = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
        return TrialPlan(definition, ranks, search, ranks=workers_per_trial)

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
        plan.source.resume(prior.trial_records())
        continued = dataclasses.replace(
            prior.definition,
            max_steps=plan.definition.max_steps,
            timeout=plan.definition.timeout,
            details=given,
        )
        return dataclasses.replace(plan, definition=continued)

    def experiment(
        self,
        record: ExperimentRecord,
        stop: Callable[[], None] | None = None,
        source: TrialSource | None = None,
    ) -> Experiment:
        from ..experiment import PopulationExperiment

        return PopulationExperiment(record, stop)

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        return runtime_arguments(given)


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
