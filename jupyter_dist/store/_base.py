"""What is recorded of a run: an experiment's definition and its trials' records (the interface the trial loop
writes them through and ``Experiment`` reads them from: _record.py), and the order views list trials in."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol import (
    Direction,
    ErrorKind,
    Objective,
    TrialState,
)
from ._wire import Restart

__all__ = [
    "EARLIER_RUNS_S",
    "EXTENDED",
    "QUEUED",
    "RUN_STARTED",
    "ExperimentDefinition",
    "TrialRecord",
    "best_first",
    "experiment_seconds",
    "new_experiment_id",
    "param_names",
    "result_repr",
]

RESULT_REPR_CHARS = 2000
# counts()'s key for the running trials that wait on a worker behind another one.
QUEUED = "queued"


def result_repr(result: Any) -> str | None:
    """A returned value as text for a view: its repr, cut at RESULT_REPR_CHARS (None for no value)."""
    if result is None:
        return None
    try:
        text = repr(result)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ must not fail the run
        text = f"<{type(result).__name__}: repr failed: {exc}>"
    return text if len(text) <= RESULT_REPR_CHARS else text[:RESULT_REPR_CHARS] + "…"


# A resumed run's definition details: when this run began, and how long its earlier runs ran (store/_journal.py
# writes both when it takes a stored run over).
RUN_STARTED = "run_started"
# The label of a trial trained on after it finished (exp.extend): the steps it was last extended to.
EXTENDED = "extended"
EARLIER_RUNS_S = "earlier_runs_s"


def experiment_seconds(created: float, details: dict[str, Any], end: float) -> float:
    """How long an experiment has run, the one definition the status line, ``Experiment.elapsed``, ``load()``,
    ``experiments()`` and the REST API all use: from the call that started it (``created``, which includes
    connecting to the cluster) to ``end`` (its end, its last heartbeat, or now). A resumed run adds this run's
    time to its earlier runs' (``details``), so the hours between a crash and the resume are not counted."""
    return details.get(EARLIER_RUNS_S, 0.0) + end - details.get(RUN_STARTED, created)


def new_experiment_id() -> str:
    """A unique id that sorts by creation time (``20261123-141502-3f9a1c``): a store keys on it, a person can
    read when it ran, and Dask task keys and event topics derive from it."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class ExperimentDefinition:
    """What an experiment is, fixed when it starts: the identity a store keys on (``id``, unique; ``name``,
    the user's handle for it) and everything needed to read its results again."""

    kind: str  # "hpo", "ablation" or "ddp"
    name: str
    objective: Objective
    space: dict[str, Any] = field(default_factory=dict)
    total: int | None = None  # trials planned; None: until the timeout
    max_steps: int | None = None
    timeout: float | None = None
    dashboard_link: str | None = None
    id: str = field(default_factory=new_experiment_id)
    created: float = field(default_factory=time.time)
    # What else a stored experiment needs to be read back or understood (JSON values): the sampler and pruner,
    # an ablation study's variants...
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialRecord:
    trial_id: int
    params: dict[str, Any]
    state: TrialState = TrialState.RUNNING
    value: float | None = None
    started: float = field(default_factory=time.time)
    duration: float | None = None
    steps: int = 0
    attempts: int = 0
    # Sent to a worker, where it waits behind the trial running there (trials/_loop.py BRIEF_TRIAL); its state
    # is running, and the views say queued until it begins (``started`` is then reset to when it began).
    queued: bool = False
    # Checkpoints (jupyter_dist.checkpoint): the newest one's folder and step, and the step the current attempt
    # resumed from (an attempt after a lost worker, or in a resumed run, that found one); None: none.
    checkpoint: str | None = None
    checkpoint_step: int | None = None
    resumed_from: int | None = None
    last: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_kind: ErrorKind | None = None
    # What the trial is, beyond its parameters (an ablation study's left-out component, its repeat).
    labels: dict[str, Any] = field(default_factory=dict)
    # A define-by-run HPO trial's Optuna distributions (Optuna's JSON of each), as its search asked them: a
    # loaded experiment's study and a resumed search know them. None: the definition's space says them.
    distributions: dict[str, Any] | None = None
    # hpo(constraints=): its constraints' values (each <= 0 when it holds), from when it completed; None: none.
    constraints: list[float] | None = None
    # What its worker seeded random, NumPy and torch with (protocol/_seeds.py); None: nothing was seeded.
    seed: int | None = None
    # An elastic data-parallel trial's regroups, oldest first: each {"at", "why", "lost" (ranks), "world_before",
    # "world_after", "lost_at" (its newest step then), "from_step" (the checkpoint it went on from),
    # "steps_redone", "message"}.
    restarts: list[Restart] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    # The curve metric's learning curve of the current attempt, for live plots.
    curve_steps: list[int] = field(default_factory=list)
    curve_values: list[float] = field(default_factory=list)
    # Pruning: when the kernel decided to stop it, and when report() raised TrialPruned on the worker.
    prune_decided_at: float | None = None
    stopped_at: float | None = None
    # A data-parallel trial's return values, whole: rank 0's, and every rank's in rank order; and rank 0's as
    # text (its repr, cut at RESULT_REPR_CHARS), which the store's JSON and the lab extension can show.
    result: Any = None
    rank_results: list | None = None
    result_repr: str | None = None

    def seconds(self, now: float | None = None) -> float | None:
        """How long the trial has run, the one definition every view uses: its duration once it has ended, the
        time since it began while it runs (``now``, default the clock), None while it waits queued."""
        if self.duration is not None:
            return self.duration
        if self.queued or self.state is not TrialState.RUNNING:
            return None
        return (time.time() if now is None else now) - self.started

    def interrupt(self, at: float) -> None:
        """The trial was running when its experiment ended (the run failed, or its kernel went away): it is
        interrupted, with the time it had run until ``at`` (a resumed run runs it again)."""
        if self.state is TrialState.RUNNING:
            if not self.queued:
                self.duration = max(0.0, at - self.started)
            self.state, self.queued = TrialState.INTERRUPTED, False

    @property
    def logs(self) -> str:
        """Captured stdout, then stderr, then the traceback if the trial failed. A stream that holds nothing but
        the "--- attempt N ---" lines each stream gets when a trial runs again is left out: said once is enough."""
        parts = ["".join(self.stdout), "".join(self.stderr), self.error or ""]
        return "\n".join(p.rstrip("\n") for p in parts if p and not _only_attempt_lines(p))


def param_names(records: Iterable[TrialRecord]) -> list[str]:
    """The parameters of these trials in the order the views list them: the search space's (a trial's params are
    made in that order), or, for a space that is a function (define-by-run), as the trials first suggested them."""
    return list(dict.fromkeys(name for record in records for name in record.params))


def best_first(records: Iterable[TrialRecord], objective: Objective) -> list[TrialRecord]:
    """Completed trials best first, then running ones (newest first), then the rest by id; by id when there
    is nothing to optimise (a data-parallel run)."""
    if objective.metric is None:
        return sorted(records, key=lambda r: r.trial_id)
    sign = -1.0 if objective.direction is Direction.MAX else 1.0

    def rank(r: TrialRecord) -> tuple:
        if r.state is TrialState.COMPLETED and r.value is not None and math.isfinite(r.value):
            return (0, sign * r.value, r.trial_id)
        if r.state is TrialState.RUNNING:
            return (1, -r.trial_id, 0)
        return (2, r.trial_id, 0)

    return sorted(records, key=rank)


def _only_attempt_lines(text: str) -> bool:
    return all(not line or line.startswith("--- attempt ") for line in text.splitlines())
