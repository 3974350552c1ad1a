"""Data-parallel training as a kind: one trial, the function's arguments as given, run as ``workers`` ranks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._validate import check_positive
from ..ddp import MIXED_PRECISIONS, STRATEGIES
from ..errors import ArgumentError
from ..experiment import DataParallelExperiment
from ..protocol import ExperimentKind, Objective, draw_seed
from ..space import validate_space
from ..store import ExperimentDefinition, InMemoryRecord
from ..trials import Elastic
from ._base import Kind
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._shared_arguments import METRIC_SHORT
from ._spec import option


@dataclass(frozen=True)
class DataParallelArguments:
    """``data_parallel()``'s own arguments."""

    workers: int = option(
        2,
        help="Ranks, each on its own Dask worker process (two ranks in one process would deadlock).",
        short="ddp: ranks, one per Dask worker (default 2)",
        magic={"type": int},
    )
    backend: str | None = option(
        None,
        help='"gloo" or "nccl"; None picks NCCL with GPUs and gloo without.',
        short="ddp: gloo or nccl (default: nccl with GPUs, else gloo)",
    )
    metric: str | None = option(
        None, help="The metric drawn live (default: the first one rank 0 reports).", short=METRIC_SHORT
    )
    threads_per_rank: int | None = option(
        None, help="torch's intra-op threads in each rank (default: the worker's, 1 under a Dask nanny)."
    )
    rendezvous_timeout: float = option(
        60.0,
        help="Seconds for every rank to join; more than that means not enough workers were free at once.",
    )
    strategy: str = option(
        "ddp",
        help='What ``prepare(model)`` does in this run unless told otherwise: "ddp" (DistributedDataParallel: '
        'every rank holds the whole model) or "fsdp" (FSDP2\'s ``fully_shard``: each rank holds a shard of every '
        "parameter, its gradient and its optimizer state).",
        short="ddp: what prepare(model) does: ddp (each rank holds the model, default) or fsdp (a shard each)",
        magic={"choices": STRATEGIES},
    )
    mixed_precision: str | None = option(
        None,
        help='What ``prepare()`` applies in this run unless told otherwise: "bf16" or "fp16" (the model\'s '
        "forward under ``torch.autocast``; with fp16 a gradient scaler: call ``jupyter_dist.backward(loss)``), or "
        "None.",
        short="ddp: bf16 or fp16: prepare(model)'s forward runs under autocast (default: full precision)",
        magic={"choices": MIXED_PRECISIONS},
    )
    min_workers: int | None = option(
        None,
        help="Make the job elastic (either bound given; the other defaults to ``workers``). When a rank's worker "
        "dies, is retired or is cut off, the job starts again by itself from its newest checkpoint on the workers "
        "it still has (at least ``min_workers``); when workers are free it grows, up to ``max_workers``, at its "
        "next checkpoint. ``jupyter_dist.world_size()`` and the prepared DataLoader follow the new size (the "
        "loader goes on from its place in the epoch). A job below ``min_workers`` for ``elastic_timeout`` seconds "
        "(default 300) ends, naming its newest checkpoint. Needs ``checkpoint()``/``restore()`` in ``fn``; every "
        "regroup is recorded (``exp.restarts``).",
        short="ddp: elastic: the job goes on from its newest checkpoint with as few ranks as this when it loses "
        "workers",
        magic={"type": int},
    )
    max_workers: int | None = option(
        None,
        short="ddp: elastic: the job grows up to this many ranks, at a checkpoint, as workers come",
        magic={"type": int},
        with_option="min_workers",
    )
    elastic_timeout: float | None = option(
        None,
        short="ddp: elastic: seconds the job may wait below --min-workers before it ends (default 300)",
        magic={"type": float},
        with_option="min_workers",
    )
    # data_parallel(**kwargs_for_train): the function's own arguments (the docstring's introduction says so).
    kwargs_for_train: dict[str, Any] | None = option(None)


class DataParallelRun(Kind):
    name = ExperimentKind.DDP
    arguments = DataParallelArguments
    experiment_class = DataParallelExperiment
    # One run, one trial: nothing to run side by side.
    fixed = {"parallel": 1}

    def plan(self, fn: Callable, options: RunOptions, args: DataParallelArguments) -> TrialPlan:
        from ..ddp import DataParallelTrial, SingleRun, check_data_parallel

        kwargs_for_train = args.kwargs_for_train or {}

        check_positive("workers", args.workers, optional=False)
        elastic = Elastic.of(
            args.workers,
            args.min_workers,
            args.max_workers,
            args.elastic_timeout,
            names=("workers", "min_workers", "max_workers", "elastic_timeout"),
        )
        check_positive("threads_per_rank", args.threads_per_rank)
        check_positive("rendezvous_timeout", args.rendezvous_timeout, integer=False, optional=False)
        if args.metric is not None and (not isinstance(args.metric, str) or not args.metric):
            raise ArgumentError(f"metric={args.metric!r}: give the name of a metric rank 0 reports, or None")
        check_data_parallel(
            options.gpus, args.backend, strategy=args.strategy, mixed_precision=args.mixed_precision
        )
        validate_space(fn, kwargs_for_train)
        # Its keywords are the function's own (a seed= there is fn's), so the run's seed is drawn, and recorded.
        seed = draw_seed()
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            Objective(args.metric),
            dict(kwargs_for_train),
            total=1,
            timeout=options.timeout,
            details={
                "workers": args.workers,
                "gpus_per_worker": options.gpus,
                "backend": args.backend,
                "strategy": args.strategy,
                "mixed_precision": args.mixed_precision,
                "seed": seed,
                **(elastic.to_details() if elastic else {}),
            },
        )
        assert options.gpus is not None  # check_data_parallel refused anything but a number
        trial_fn = DataParallelTrial(
            fn,
            backend=args.backend,
            gpus_per_worker=options.gpus,
            threads=args.threads_per_rank,
            rendezvous_timeout=args.rendezvous_timeout,
            strategy=args.strategy,
            mixed_precision=args.mixed_precision,
        )
        return TrialPlan(
            definition, trial_fn, SingleRun(kwargs_for_train, seed), ranks=args.workers, elastic=elastic
        )

    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """The run again, as its next attempt: the same id and name, so the same checkpoints; this call's
        arguments; its ranks seeded as before (a stored run from before seeds keeps this call's)."""
        from ..ddp import SingleRun

        details = plan.definition.details
        source = plan.source
        stored = prior.definition.details.get("seed")
        if stored is not None:
            details, source = {**details, "seed": stored}, SingleRun(dict(plan.definition.space), stored)
        definition = dataclasses.replace(
            prior.definition, space=plan.definition.space, timeout=options.timeout, details=details
        )
        return dataclasses.replace(plan, definition=definition, source=source)
