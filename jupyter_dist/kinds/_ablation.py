"""An ablation study as a kind: the plan's variants, each leaving one component (or group) out, ``repeats`` times."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any

from .._validate import check_metric, check_positive
from ..errors import ArgumentError
from ..experiment import Experiment
from ..protocol import Direction, ExperimentKind, Objective
from ..store import ExperimentDefinition, ExperimentRecord, InMemoryRecord
from ..trials import TrialSource
from ._base import Kind, MagicSpec, check_same_objective, finished_and_rerun, option
from ._control import CALLBACKS, OBJECTIVE_SCOPE
from ._options import RunOptions, TrialPlan
from ._runtime_options import TRIAL_RUNTIME_OPTIONS, runtime_arguments


class AblationStudy(Kind):
    name = ExperimentKind.ABLATION
    metric_for = "compare"
    magic = MagicSpec(
        options=(
            option("--features", help="ablation: features to leave out, comma-separated"),
            option("--modules", help="ablation: modules (dotted names) to leave out, comma-separated"),
            option("--flags", help="ablation: boolean arguments to set False, comma-separated"),
            option("--group", action="append", help="ablation: NAME=a,b leaves a and b out together"),
            option("--repeats", type=int, help="ablation: runs per variant (default 1)"),
            CALLBACKS,
            OBJECTIVE_SCOPE,
            *TRIAL_RUNTIME_OPTIONS,
        ),
        view_shows_summary=True,
    )

    def plan(
        self,
        fn: Callable,
        options: RunOptions,
        *,
        features: list[str] | None,
        modules: list[str] | None,
        flags: list[str] | None,
        groups: dict[str, list[str]] | None,
        metric: str | None,
        mode: str,
        repeats: int,
        params: dict[str, Any] | None,
        seed: int,
    ) -> TrialPlan:
        from ..ablation import AblationSource, AblationTrial, plan_study

        check_metric(self.name, metric, self.metric_for)
        objective = Objective(metric, Direction.parse(mode), options.scope)
        check_positive("gpus_per_trial", options.gpus)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ArgumentError(f"seed={seed!r}: give an int")
        study = plan_study(
            fn,
            features=features,
            modules=modules,
            flags=flags,
            groups=groups,
            repeats=repeats,
            params=params,
            seed=seed,
        )
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            objective,
            dict(params or {}),
            total=len(study.trials),
            timeout=options.timeout,
            details={
                "variants": [dataclasses.asdict(v) for v in study.variants],
                "repeats": repeats,
                "seed": seed,
            },
        )
        trial_fn = AblationTrial(fn, study.modules, study.removed_modules())
        return TrialPlan(definition, trial_fn, AblationSource(study))

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
        return dataclasses.replace(plan, definition=definition, source=AblationSource(plan.source.plan, done))

    def experiment(
        self,
        record: ExperimentRecord,
        stop: Callable[[], None] | None = None,
        source: TrialSource | None = None,
    ) -> Experiment:
        from ..ablation import AblationExperiment

        study = source.plan if source is not None else plan_of(record)
        return AblationExperiment(record, stop, plan=study)

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        arguments = runtime_arguments(given)
        for name in ("features", "modules", "flags"):
            if name in arguments:
                arguments[name] = _comma_list(arguments[name])
        if "group" in arguments:
            arguments["groups"] = _groups(arguments.pop("group"))
        return arguments

    def magic_needs(self, arguments: dict[str, Any]) -> Iterable[str]:
        return (["features"] if arguments.get("features") else []) + (arguments.get("flags") or [])


def plan_of(record: ExperimentRecord):
    """A stored study's variants, as its definition keeps them (enough for its summary and chart)."""
    from ..ablation import Plan, Variant

    variants = tuple(
        Variant(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        for d in record.definition.details.get("variants", [])
    )
    return Plan(variants, (), ())


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
