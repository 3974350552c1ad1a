"""Hyperparameter optimisation as a kind: Optuna's ask/tell search over the space, one trial per configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .._validate import check_metric, check_positive
from ..errors import ArgumentError
from ..protocol import ExperimentKind, Objective
from ..space import is_space_function, searched, validate_space
from ..store import ExperimentDefinition, InMemoryRecord
from ..trials import Elastic
from ._base import Kind, MagicSpec, check_same_objective, finished_and_rerun, option
from ._control import CALLBACKS, OBJECTIVE_SCOPE, STOP, TARGET
from ._options import RunOptions, TrialPlan
from ._runtime_options import TRIAL_RUNTIME_OPTIONS, runtime_arguments

# The definition's details key that marks a define-by-run space (the function's name).
SPACE_FUNCTION = "space_function"
SPACE = option(
    "--space",
    help="hpo, pbt: the search-space dict (hpo: or a function space(trial)); default: the one the cell defines",
)
MAX_STEPS = option(
    "--max-steps",
    type=int,
    help="hpo: the most steps a trial reports (ASHA rungs); pbt: the steps each member trains",
)


class HyperparameterSearch(Kind):
    name = ExperimentKind.HPO
    metric_for = "optimise"
    magic = MagicSpec(
        options=(
            option("--trials", type=int, help="hpo: number of trials (default 32; with --timeout: no limit)"),
            option("--sampler", help="hpo: tpe, random, grid, gp, cmaes, nsga2 or nsga3 (default tpe)"),
            option(
                "--constraints",
                variable=True,
                help="hpo: a function in the notebook of a trial's metrics, a number per constraint (<= 0: met)",
            ),
            option(
                "--pruner",
                help="hpo: asha (default), median, hyperband or none; with several metrics pareto (default) or none",
            ),
            MAX_STEPS,
            SPACE,
            option(
                "--enqueue",
                variable=True,
                help="hpo: a list of configurations (dicts) to run first, e.g. known good ones",
            ),
            CALLBACKS,
            STOP,
            TARGET,
            OBJECTIVE_SCOPE,
            *TRIAL_RUNTIME_OPTIONS,
        ),
        takes_space=True,
    )

    def plan(
        self,
        fn: Callable,
        options: RunOptions,
        *,
        search_space: dict[str, Any] | Callable,
        trials: int | None,
        metric: str | None,
        mode: str,
        sampler: Any,
        pruner: Any,
        seed: int | None,
        max_steps: int | None,
        workers_per_trial: int,
        enqueue: list[dict[str, Any]] | None = None,
        min_workers_per_trial: int | None = None,
        max_workers_per_trial: int | None = None,
        elastic_timeout: float | None = None,
    ) -> TrialPlan:
        from ..search import OptunaSearch

        if not isinstance(metric, (list, tuple)):
            check_metric(self.name, metric, self.metric_for)
        objective = Objective.of(metric, mode, options.scope)
        check_positive("max_steps", max_steps)
        check_positive("workers_per_trial", workers_per_trial, optional=False)
        elastic = Elastic.of(
            workers_per_trial,
            min_workers_per_trial,
            max_workers_per_trial,
            elastic_timeout,
            names=("workers_per_trial", "min_workers_per_trial", "max_workers_per_trial", "elastic_timeout"),
        )
        check_positive("gpus_per_trial", options.gpus)
        if options.gpus and workers_per_trial > 1:
            raise ArgumentError(
                "gpus_per_trial= places single-process trials; it is not combined with workers_per_trial > 1 "
                "(GPUs for each rank of an HPO trial): use one or the other"
            )
        space_function = is_space_function(search_space)
        if not space_function:
            validate_space(fn, search_space)
        if workers_per_trial > 1 and (options.max_failures or options.cpus_per_trial):
            raise ArgumentError(
                "max_failures= and cpus_per_trial= are for single-process trials; with workers_per_trial > 1 "
                "each trial is a data-parallel job (its ranks' threads: a DataParallelTrial's own): leave them out"
            )
        search = OptunaSearch(
            search_space,
            trials=trials,
            objective=objective,
            sampler=sampler,
            pruner=pruner,
            max_steps=max_steps,
            seed=seed,
            unlimited=options.timeout is not None,
            fn=fn,
            enqueue=enqueue,
        )
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            {} if space_function else dict(search_space),
            total=search.total,
            max_steps=max_steps,
            timeout=options.timeout,
            details={
                "sampler": repr(sampler),
                # what prunes: with several objectives, the Pareto pruner or none (_optuna_search.pareto_pruner)
                "pruner": repr(pruner)
                if not objective.several
                else repr("pareto" if search.pareto else None),
                "seed": seed,
                "workers_per_trial": workers_per_trial,
                **(elastic.to_details() if elastic else {}),
                # A define-by-run space: its function's name (each trial keeps its own distributions).
                **(
                    {SPACE_FUNCTION: getattr(search_space, "__qualname__", repr(search_space))}
                    if space_function
                    else {}
                ),
                **({"enqueue": search.enqueued} if search.enqueued else {}),
            },
        )
        if workers_per_trial == 1 and elastic is None:
            return TrialPlan(definition, fn, search)
        from ..ddp import DataParallelTrial

        ranks = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
        return TrialPlan(definition, ranks, search, ranks=workers_per_trial, elastic=elastic)

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """Tell the search the stored trials; the trials the last run left unfinished run again first."""
        definition, search = plan.definition, plan.source
        check_same_objective(prior, definition.objective, options.name)
        was_function = SPACE_FUNCTION in prior.definition.details
        if was_function != (search.space_function is not None):
            stored_as = "a function space(trial)" if was_function else "a dict of space objects"
            raise ArgumentError(
                f"{prior.definition.name!r} searched {stored_as}; resume it with the same kind of search space"
            )
        stored = set(searched(prior.definition.space))
        if stored != set(search.searched):
            raise ArgumentError(
                f"{prior.definition.name!r} searched {sorted(stored)}; resume it with the same search space, "
                f"not {sorted(search.searched)}"
            )
        from ..search import objective_curves

        finished, rerun = finished_and_rerun(prior)
        search.resume(finished, rerun, objective_curves(prior, finished))
        continued = dataclasses.replace(
            prior.definition,
            total=search.total,
            max_steps=definition.max_steps,
            timeout=definition.timeout,
            details=definition.details,
        )
        return dataclasses.replace(plan, definition=continued)

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        arguments = runtime_arguments(given)
        if "timeout" in arguments:  # --timeout without --trials: as many trials as fit in the time
            arguments.setdefault("trials", None)
        if arguments.get("pruner") == "none":
            arguments["pruner"] = None
        # several objectives: --metric val_acc,latency_ms --mode max,min
        for name in ("metric", "mode"):
            if isinstance(arguments.get(name), str) and "," in arguments[name]:
                arguments[name] = [part.strip() for part in arguments[name].split(",")]
        return arguments
