"""Data-parallel training as a kind: one trial, the function's arguments as given, run as ``workers`` ranks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .._validate import check_positive
from ..ddp import MIXED_PRECISIONS, STRATEGIES
from ..errors import ArgumentError
from ..experiment import Experiment
from ..protocol import ExperimentKind, Objective
from ..space import validate_space
from ..store import ExperimentDefinition, ExperimentRecord, InMemoryRecord
from ..trials import Elastic, TrialSource
from ._base import Kind, MagicSpec, option
from ._control import CALLBACKS, STOP
from ._options import RunOptions, TrialPlan
from ._runtime_options import RESOURCES_OPTION, runtime_arguments


class DataParallelRun(Kind):
    name = ExperimentKind.DDP
    magic = MagicSpec(
        options=(
            option("--workers", type=int, help="ddp: ranks, one per Dask worker (default 2)"),
            option(
                "--min-workers",
                type=int,
                help="ddp: elastic: the job goes on from its newest checkpoint with as few ranks as this when it "
                "loses workers",
            ),
            option(
                "--max-workers",
                type=int,
                help="ddp: elastic: the job grows up to this many ranks, at a checkpoint, as workers come",
            ),
            option(
                "--elastic-timeout",
                type=float,
                help="ddp: elastic: seconds the job may wait below --min-workers before it ends (default 300)",
            ),
            option("--gpus-per-worker", type=float, help="ddp: GPUs per rank (default 0: CPU)"),
            option("--backend", help="ddp: gloo or nccl (default: nccl with GPUs, else gloo)"),
            option(
                "--strategy",
                choices=STRATEGIES,
                help="ddp: what prepare(model) does: ddp (each rank holds the model, default) or fsdp (a shard "
                "each)",
            ),
            option(
                "--mixed-precision",
                choices=MIXED_PRECISIONS,
                help="ddp: bf16 or fp16: prepare(model)'s forward runs under autocast (default: full precision)",
            ),
            CALLBACKS,
            STOP,
            RESOURCES_OPTION,
        ),
        # One run: nothing to optimise in a direction, nothing to run side by side, no sampler to seed; its GPUs
        # are each rank's (--gpus-per-worker).
        refuses=("direction", "parallel", "seed", "gpus_per_trial"),
    )

    def plan(
        self,
        fn: Callable,
        options: RunOptions,
        *,
        workers: int,
        backend: str | None,
        min_workers: int | None,
        max_workers: int | None,
        elastic_timeout: float | None,
        metric: str | None,
        threads_per_rank: int | None,
        rendezvous_timeout: float,
        strategy: str,
        mixed_precision: str | None,
        kwargs_for_train: dict[str, Any],
    ) -> TrialPlan:
        from ..ddp import DataParallelTrial, SingleRun, check_data_parallel

        check_positive("workers", workers, optional=False)
        elastic = Elastic.of(
            workers,
            min_workers,
            max_workers,
            elastic_timeout,
            names=("workers", "min_workers", "max_workers", "elastic_timeout"),
        )
        check_positive("threads_per_rank", threads_per_rank)
        check_positive("rendezvous_timeout", rendezvous_timeout, integer=False, optional=False)
        if metric is not None and (not isinstance(metric, str) or not metric):
            raise ArgumentError(f"metric={metric!r}: give the name of a metric rank 0 reports, or None")
        check_data_parallel(options.gpus, backend, strategy=strategy, mixed_precision=mixed_precision)
        validate_space(fn, kwargs_for_train)
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            Objective(metric),
            dict(kwargs_for_train),
            total=1,
            timeout=options.timeout,
            details={
                "workers": workers,
                "gpus_per_worker": options.gpus,
                "backend": backend,
                "strategy": strategy,
                "mixed_precision": mixed_precision,
                **(elastic.to_details() if elastic else {}),
            },
        )
        trial_fn = DataParallelTrial(
            fn,
            backend=backend,
            gpus_per_worker=options.gpus,
            threads=threads_per_rank,
            rendezvous_timeout=rendezvous_timeout,
            strategy=strategy,
            mixed_precision=mixed_precision,
        )
        return TrialPlan(definition, trial_fn, SingleRun(kwargs_for_train), ranks=workers, elastic=elastic)

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """The run again, as its next attempt: the same id and name, so the same checkpoints; this call's
        arguments."""
        definition = dataclasses.replace(
            prior.definition,
            space=plan.definition.space,
            timeout=options.timeout,
            details=plan.definition.details,
        )
        return dataclasses.replace(plan, definition=definition)

    def experiment(
        self,
        record: ExperimentRecord,
        stop: Callable[[], None] | None = None,
        source: TrialSource | None = None,
    ) -> Experiment:
        from ..experiment import DataParallelExperiment

        return DataParallelExperiment(record, stop, workers=record.definition.details.get("workers"))

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        return runtime_arguments(given)
