"""An ablation study as a kind: the plan's variants, each leaving one component (or group) out, ``repeats`` times."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._validate import check_metric
from ..ablation import AblationExperiment
from ..errors import ArgumentError
from ..experiment import Experiment
from ..protocol import Direction, ExperimentKind, Objective
from ..store import ExperimentDefinition, ExperimentRecord, InMemoryRecord
from ..trials import TrialSource
from ._base import Kind, MagicSpec, check_same_objective, finished_and_rerun
from ._checks import check_gpus
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._shared_arguments import METRIC_SHORT, MODE_MAGIC, MODE_SHORT, SEED_SHORT
from ._spec import option


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _groups(specs: list[str]) -> dict[str, list[str]] | None:
    groups = {}
    for spec in specs:
        name, sep, members = spec.partition("=")
        if not sep or not name.strip():
            raise ArgumentError(f"--group {spec}: write it as NAME=component,component")
        groups[name.strip()] = _comma_list(members)
    return groups or None


@dataclass(frozen=True)
class AblationArguments:
    """``ablation()``'s own arguments."""

    features: list[str] | None = option(
        None,
        help="Names of input features. ``fn`` takes a ``features`` argument: the baseline gets the whole list, "
        "the trial that leaves feature f out gets the list without f (order kept).",
        short="ablation: features to leave out, comma-separated",
        parse=_comma_list,
    )
    modules: list[str] | None = option(
        None,
        help="Dotted submodule names, as in ``model.named_modules()``. ``fn`` calls ``model = "
        "jupyter_dist.ablate(model)`` once it has built the model; in the trial that leaves a module out it is "
        "replaced by an identity.",
        short="ablation: modules (dotted names) to leave out, comma-separated",
        parse=_comma_list,
    )
    flags: list[str] | None = option(
        None,
        help="Boolean arguments of ``fn`` that default to True; the trial that leaves flag g out passes "
        "``g=False``.",
        short="ablation: boolean arguments to set False, comma-separated",
        parse=_comma_list,
    )
    groups: dict[str, list[str]] | None = option(
        None,
        help="``{name: [component, ...]}``: components (from the three lists) left out together in one more "
        "trial.",
        short="ablation: NAME=a,b leaves a and b out together",
        flags=("--group",),
        magic={"action": "append"},
        parse=_groups,
    )
    metric: str | None = option(
        None,
        help='The metric to compare (reported or returned by ``fn``) and whether higher ("max") or lower is '
        "better.",
        short=METRIC_SHORT,
    )
    mode: str = option("max", short=MODE_SHORT, magic=MODE_MAGIC, with_option="metric")
    repeats: int = option(
        1,
        help="Runs per variant. Repeat r passes ``seed=seed + r`` to every variant when ``fn`` takes ``seed``, and "
        "seeds every variant's Python ``random``, NumPy and torch generators alike (from ``seed`` and r), so each "
        "comparison with the baseline is paired; the summary then has a mean and a std per component.",
        short="ablation: runs per variant (default 1)",
        magic={"type": int},
    )
    params: dict[str, Any] | None = option(
        None, help="Fixed arguments for every trial (e.g. the best hyperparameters an HPO experiment found)."
    )
    seed: int = option(
        0, help="The seed of repeat 0 (see ``repeats``).", short=SEED_SHORT, magic={"type": int}
    )


class AblationStudy(Kind):
    name = ExperimentKind.ABLATION
    metric_for = "compare"
    arguments = AblationArguments
    experiment_class = AblationExperiment
    magic = MagicSpec(view_shows_summary=True)

    def plan(self, fn: Callable, options: RunOptions, args: AblationArguments) -> TrialPlan:
        from ..ablation import AblationSource, AblationTrial, plan_study

        check_metric(self.name, args.metric, self.metric_for)
        objective = Objective(args.metric, Direction.parse(args.mode), options.scope)
        check_gpus("gpus_per_trial", options.gpus)
        if isinstance(args.seed, bool) or not isinstance(args.seed, int):
            raise ArgumentError(f"seed={args.seed!r}: give an int")
        study = plan_study(
            fn,
            features=args.features,
            modules=args.modules,
            flags=args.flags,
            groups=args.groups,
            repeats=args.repeats,
            params=args.params,
            seed=args.seed,
        )
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            dict(args.params or {}),
            total=len(study.trials),
            timeout=options.timeout,
            details={
                "variants": [dataclasses.asdict(v) for v in study.variants],
                "repeats": args.repeats,
                "seed": args.seed,
            },
        )
        trial_fn = AblationTrial(fn, study.modules, study.removed_modules())
        return TrialPlan(definition, trial_fn, AblationSource(study, seed=args.seed))

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """Run the variants' trials the stored study has not finished."""
        from ..ablation import AblationSource

        check_same_objective(prior, plan.definition.objective, options.name)
        # as JSON, which is how the store holds them (tuples come back as lists)
        variants = plan.definition.details["variants"]
        if json.dumps(prior.definition.details.get("variants")) != json.dumps(variants):
            raise ArgumentError(
                f"{options.name!r} studied other components; resume it with the same features, modules, flags "
                "and groups"
            )
        done = {rec.trial_id for rec in finished_and_rerun(prior)[0]}
        definition = dataclasses.replace(prior.definition, timeout=options.timeout)
        assert isinstance(plan.source, AblationSource)  # the source plan() made
        return dataclasses.replace(
            plan, definition=definition, source=AblationSource(plan.source.plan, done, plan.source.seed)
        )

    def experiment(
        self,
        record: ExperimentRecord,
        stop: Callable[[], None] | None = None,
        source: TrialSource | None = None,
    ) -> Experiment:
        from ..ablation import AblationSource

        # A live study's Experiment has its whole plan; a stored one reads its variants back from the record.
        if source is not None:
            assert isinstance(source, AblationSource)  # the source plan() made
        study = source.plan if source is not None else plan_of(record)
        return self.experiment_class(record, stop, plan=study)

    def magic_needs(self, arguments: dict[str, Any]) -> Iterable[str]:
        return (["features"] if arguments.get("features") else []) + (arguments.get("flags") or [])


def plan_of(record: ExperimentRecord):
    """A stored study's variants, as its definition keeps them (enough for its summary and chart)."""
    from ..ablation import Plan, Variant

    def variant(stored: dict[str, Any]) -> Variant:
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in stored.items()}
        return Variant(**fields)

    variants = tuple(variant(d) for d in record.definition.details.get("variants", []))
    return Plan(variants, (), ())
