"""Hyperparameter optimisation as a kind: Optuna's ask/tell search over the space, one trial per configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._validate import check_metric, check_positive
from ..errors import ArgumentError
from ..protocol import ExperimentKind, Objective
from ..search import DEFAULT_PRUNER
from ..space import is_space_function, searched, validate_space
from ..store import ExperimentDefinition, InMemoryRecord
from ..trials import Elastic
from ._base import Kind, MagicSpec, check_same_objective, finished_and_rerun
from ._checks import check_gpus
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._shared_arguments import METRIC_SHORT, MODE_MAGIC, MODE_SHORT, SEED_SHORT
from ._spec import option

# The definition's details key that marks a define-by-run space (the function's name).
SPACE_FUNCTION = "space_function"


def _one_or_list(text: str) -> str | list[str]:
    """Several objectives on the magic's line: ``--metric val_acc,latency_ms --mode max,min``."""
    return [part.strip() for part in text.split(",")] if "," in text else text


SPACE_SHORT = (
    "hpo, pbt: the search-space dict (hpo: or a function space(trial)); default: the one the cell defines"
)
MAX_STEPS_SHORT = "hpo: the most steps a trial reports (ASHA rungs); pbt: the steps each member trains"


@dataclass(frozen=True)
class HpoArguments:
    """``hpo()``'s own arguments."""

    search_space: dict[str, Any] | Callable = option(
        help="``{argument: space.uniform(...) | space.loguniform(...) | space.integer(...) | space.choice([...])}``; "
        "plain values are constants passed to every trial. Or a function ``space(trial)`` taking an "
        "``optuna.Trial`` (Optuna's define-by-run idiom, for conditional parameters): it calls "
        "``trial.suggest_*``, only where its branch needs them, and may return a dict of further arguments; each "
        "trial gets exactly what it suggested plus that dict (a parameter not suggested is absent, so its default "
        "applies). It is run on a throwaway study before any work starts.",
        short=SPACE_SHORT,
        flags=("--space",),
    )
    trials: int | None = option(
        32,
        help='How many trials to run (with ``sampler="grid"``: at most the grid\'s size; None means the whole '
        "grid, or, with ``timeout``, as many as fit in the time).",
        short="hpo: number of trials (default 32; with --timeout: no limit)",
        magic={"type": int},
    )
    metric: str | list[str] | None = option(
        None,
        help='The objective\'s name and whether to maximise ("max") or minimise ("min") it. Several objectives: '
        'lists, one mode each (``metric=["val_acc", "latency_ms"], mode=["max", "min"]``): Optuna\'s '
        "multi-objective samplers search them, ``exp.pareto`` is the front of non-dominated trials, and "
        "``exp.best`` is refused (there is no one best). Each trial's value of each objective is what it "
        "returned, else its last report.",
        short=METRIC_SHORT,
        parse=_one_or_list,
    )
    mode: str | list[str] = option(
        "max", short=MODE_SHORT, magic=MODE_MAGIC, parse=_one_or_list, with_option="metric"
    )
    sampler: Any = option(
        "tpe",
        help='"tpe", "random", "grid", "gp", "cmaes", "nsga2", "nsga3", or an ``optuna.samplers.BaseSampler`` '
        'instance (several objectives: any but "cmaes").',
        short="hpo: tpe, random, grid, gp, cmaes, nsga2 or nsga3 (default tpe)",
    )
    sampler_window: int | None = option(
        None,
        help="The newest finished trials a learning sampler (TPE, GP, CMA-ES, NSGA) and the pruner learn from, "
        "besides the best one: older trials are dropped from the search's study (the experiment keeps them all), "
        "so its time per trial stops growing with the trials before it. None: every trial. Random search, grid "
        "and QMC with no pruner learn from none anyway.",
        short="hpo: the newest finished trials the sampler learns from (default: all)",
        magic={"type": int},
    )
    pruner: Any = option(
        DEFAULT_PRUNER,
        help='Early stopping of running trials: "asha" (the default), "median", "hyperband", an '
        "``optuna.pruners.BasePruner`` instance, or None (every trial runs to its end). Decided in the kernel "
        "from the streamed reports of ``metric``; the trial's next ``report()`` raises ``TrialPruned``. Several "
        'objectives: "pareto" (the default then: successive halving on the non-dominated rank, where Optuna '
        "cannot prune) or None; a single-objective pruner is refused.",
        short="hpo: asha (default), median, hyperband or none; with several metrics pareto (default) or none",
        parse=lambda text: None if text == "none" else text,
    )
    seed: int | None = option(
        None,
        help="Seeds the sampler, and each trial's Python ``random``, NumPy and torch generators (from this seed and "
        "the trial's id): the same seed gives the same trials and the same values trial by trial. None: one is "
        "drawn, and recorded (``exp.seed``, ``exp.trials``'s ``seed`` column).",
        short=SEED_SHORT,
        magic={"type": int},
    )
    max_steps: int | None = option(
        None,
        help="The most steps a trial reports (its budget): places the ASHA/Hyperband rungs and measures the "
        "compute pruning saved.",
        short=MAX_STEPS_SHORT,
        magic={"type": int},
    )
    workers_per_trial: int = option(
        1,
        help="k > 1 makes every trial a k-rank data-parallel job, as ``data_parallel(fn, workers=k)`` runs it "
        "(``prepare()`` inside the function); ``parallel`` then defaults to the workers // k.",
    )
    min_workers_per_trial: int | None = option(
        None,
        help="Make those jobs elastic, as ``data_parallel(min_workers=, max_workers=, elastic_timeout=)`` does: a "
        "trial that loses a rank's worker goes on from its newest checkpoint with the ranks left, and grows onto "
        "free workers at its next checkpoint.",
    )
    max_workers_per_trial: int | None = option(None, with_option="min_workers_per_trial")
    elastic_timeout: float | None = option(None, with_option="min_workers_per_trial")
    enqueue: list[dict[str, Any]] | None = option(
        None,
        help='Known configurations to run first, in order, e.g. ``[{"lr": 1e-3, "layers": 2}, {"lr": 3e-4}]`` '
        "(Optuna's ``study.enqueue_trial``, Ray Tune's ``points_to_evaluate``). A partial one has the rest "
        "sampled; each counts towards ``trials`` and is told to the sampler as its own trial; its trial carries "
        "the configuration as the label ``enqueued``. Unknown names and values outside their space are refused "
        "before any work starts; a resumed run skips the configurations that already ran.",
        short="hpo: a list of configurations (dicts) to run first, e.g. known good ones",
        variable=True,
    )
    warm_start: Any = option(
        None,
        help="Earlier HPO experiments (Experiments, or names in the store) whose completed trials, and pruned ones "
        "with their curves, are told to the sampler before it asks, without running them again. Parameters the "
        "new space lacks are dropped; trials outside its ranges or choices are left out; the views say how many "
        "were told (\"warm start: 14 trials from 'a', 'b'; 2 outside the space\") and ``exp.study`` holds them. "
        "Their metric and mode must be this search's. Any sampler but ``grid``, with a dict search space.",
        short="hpo: earlier experiments (names, comma-separated) whose trials the sampler is told first",
        flags=("--warm-start",),
        parse=lambda text: [part.strip() for part in text.split(",") if part.strip()],
    )


class HyperparameterSearch(Kind):
    name = ExperimentKind.HPO
    metric_for = "optimise"
    arguments = HpoArguments
    magic = MagicSpec(takes_space=True)

    def plan(self, fn: Callable, options: RunOptions, args: HpoArguments) -> TrialPlan:
        from ..search import OptunaSearch

        if not isinstance(args.metric, (list, tuple)):
            check_metric(self.name, args.metric, self.metric_for)
        objective = Objective.of(args.metric, args.mode, options.scope)
        check_positive("max_steps", args.max_steps)
        check_positive("workers_per_trial", args.workers_per_trial, optional=False)
        elastic = Elastic.of(
            args.workers_per_trial,
            args.min_workers_per_trial,
            args.max_workers_per_trial,
            args.elastic_timeout,
            names=("workers_per_trial", "min_workers_per_trial", "max_workers_per_trial", "elastic_timeout"),
        )
        check_gpus("gpus_per_trial", options.gpus)
        if options.gpus and args.workers_per_trial > 1:
            raise ArgumentError(
                "gpus_per_trial= places single-process trials; it is not combined with workers_per_trial > 1 "
                "(GPUs for each rank of an HPO trial): use one or the other"
            )
        space_function = is_space_function(args.search_space)
        if not is_space_function(args.search_space):
            validate_space(fn, args.search_space)
        if args.workers_per_trial > 1 and (options.max_failures or options.cpus_per_trial):
            raise ArgumentError(
                "max_failures= and cpus_per_trial= are for single-process trials; with workers_per_trial > 1 "
                "each trial is a data-parallel job (its ranks' threads: a DataParallelTrial's own): leave them out"
            )
        search = OptunaSearch(
            args.search_space,
            trials=args.trials,
            objective=objective,
            sampler=args.sampler,
            pruner=args.pruner,
            max_steps=args.max_steps,
            seed=args.seed,
            unlimited=options.timeout is not None,
            fn=fn,
            enqueue=args.enqueue,
            window=args.sampler_window,
        )
        warm = self._warm_start(args, search, options, objective)
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            {} if is_space_function(args.search_space) else dict(args.search_space),
            total=search.total,
            max_steps=args.max_steps,
            timeout=options.timeout,
            details={
                "sampler": repr(args.sampler),
                # what prunes: with several objectives, the Pareto pruner or none (_optuna_search.pareto_pruner)
                "pruner": repr(args.pruner)
                if not objective.several
                else repr("pareto" if search.pareto else None),
                "seed": args.seed,
                "workers_per_trial": args.workers_per_trial,
                **(elastic.to_details() if elastic else {}),
                # A define-by-run space: its function's name (each trial keeps its own distributions).
                **(
                    {SPACE_FUNCTION: getattr(args.search_space, "__qualname__", repr(args.search_space))}
                    if space_function
                    else {}
                ),
                **({"enqueue": search.enqueued} if search.enqueued else {}),
                **({"warm_start": warm} if warm is not None else {}),
            },
        )
        if args.workers_per_trial == 1 and elastic is None:
            return TrialPlan(definition, fn, search)
        from ..ddp import DataParallelTrial

        ranks = DataParallelTrial(fn, backend=None, gpus_per_worker=0, threads=None, rendezvous_timeout=60)
        return TrialPlan(definition, ranks, search, ranks=args.workers_per_trial, elastic=elastic)

    def _warm_start(
        self, args: HpoArguments, search: Any, options: RunOptions, objective: Objective
    ) -> dict[str, Any] | None:
        """Tell ``search`` the earlier experiments' trials (warm_start=); what was told, for the details."""
        if args.warm_start is None:
            return None
        from ..search import warm_start, warm_start_trials

        if search.space_function is not None:
            raise ArgumentError(
                "warm_start= fits earlier trials to a dict search space: a function space(trial) says its "
                "parameters only as each trial runs; give a dict"
            )
        if args.sampler == "grid":
            raise ArgumentError(
                "warm_start= tells a sampler that learns: sampler='grid' runs every point anyway"
            )
        earlier = [_record_of(item, options.store) for item in _as_list(args.warm_start)]
        warm = warm_start(earlier, search.searched, objective)
        search.tell_earlier(warm_start_trials(warm, search.searched))
        return warm

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """Tell the search the stored trials; the trials the last run left unfinished run again first."""
        from ..search import OptunaSearch

        definition, search = plan.definition, plan.source
        assert isinstance(search, OptunaSearch)  # the source plan() made
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
        details = definition.details
        warm = prior.definition.details.get("warm_start")
        if warm is not None and "warm_start" not in details:  # told again, as the first run was
            from ..search import warm_start_trials

            search.tell_earlier(warm_start_trials(warm, search.searched))
            details = {**details, "warm_start": warm}
        search.resume(finished, rerun, objective_curves(prior, finished))
        continued = dataclasses.replace(
            prior.definition,
            total=search.total,
            max_steps=definition.max_steps,
            timeout=definition.timeout,
            details=details,
        )
        return dataclasses.replace(plan, definition=continued)

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        arguments = super().magic_arguments(given)
        if "timeout" in arguments:  # --timeout without --trials: as many trials as fit in the time
            arguments.setdefault("trials", None)
        return arguments


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _record_of(earlier: Any, store: Any) -> InMemoryRecord | Any:
    """The record of an earlier experiment given to warm_start=: an Experiment's, or a stored one's by name."""
    from ..experiment import Experiment
    from ..store import NotInStore, read_record, store_path

    if isinstance(earlier, Experiment):
        return earlier.record
    if not isinstance(earlier, str) or not earlier:
        raise ArgumentError(
            f"warm_start={earlier!r:.60}: give Experiments, or the names of stored experiments (a list of them)"
        )
    path = store_path(store)
    if path is None:
        raise ArgumentError(f"warm_start={earlier!r} names a stored experiment, but this run has no store")
    try:
        return read_record(path, earlier)[0]
    except NotInStore:
        raise ArgumentError(
            f"warm_start: there is no experiment named {earlier!r} in {path}; jupyter_dist.experiments() lists "
            "the stored ones"
        ) from None
