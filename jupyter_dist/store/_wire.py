"""The JSON the views read, declared once: what the REST API answers (server/) and what the kernel saves in a cell's
output (widgets/_lab.py). The lab extension's types (labextension/src/wire.ts) are generated from these by
scripts/wire_types.py, so the two sides cannot drift apart; a test fails when wire.ts is out of date.

Every number is JSON-ready: a non-finite float (a NaN loss) is sent as null, since browsers' JSON has no NaN.
In the annotations ``Any`` is what the views may read freely (TypeScript's ``any``), ``object`` what they must
look at before using (``unknown``): a parameter may be any JSON value.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, TypedDict

# typing's own from Python 3.11. At run time too: scripts/wire_types.py and the tests read these types with
# typing.get_type_hints, which evaluates the annotations.
if sys.version_info >= (3, 11):
    from typing import NotRequired
else:
    from typing_extensions import NotRequired

__all__ = [
    "BestTrial",
    "ComparedExperiment",
    "CurvesPage",
    "CurvesSnapshot",
    "DefinitionJson",
    "ExperimentBundle",
    "ExperimentComparison",
    "ExperimentDetail",
    "ExperimentList",
    "ExperimentSummary",
    "MetricsPage",
    "Mode",
    "ParamImportances",
    "TrialLogs",
    "TrialSummary",
    "TrialsPage",
    "UtilizationPage",
]

Mode = Literal["min", "max"]


class _ExperimentFields(TypedDict):
    id: str
    name: str
    kind: str  # "hpo", "ablation" or "ddp"
    state: str  # running, completed, stopped, failed, or interrupted (its kernel is gone)
    trials_done: int
    trials_total: int | None  # None: bounded by a timeout
    metric: str | None  # None: nothing to optimise (a data-parallel run)
    mode: Mode | None
    started: float  # its first start (a resumed run keeps it)
    duration: float  # seconds it has run, its earlier runs included (store.experiment_seconds)


class ExperimentSummary(_ExperimentFields):
    """One row of GET /jupyter-dist/api/experiments."""

    best: float | None


class ExperimentList(TypedDict):
    """GET /jupyter-dist/api/experiments?offset=&limit=: a page of the listing, newest first."""

    experiments: list[ExperimentSummary]
    total: int


class Restart(TypedDict):
    """An elastic data-parallel trial started again at another size (TrialRecord.restarts)."""

    at: float
    why: str  # the ranks lost and their workers, or "more workers are free"
    lost: list[int]  # the ranks lost (none when it grew)
    world_before: int
    world_after: int
    lost_at: int | None  # its newest reported step then
    from_step: int  # the checkpoint it went on from
    steps_redone: int
    message: str  # as every view says it


class TrialSummary(TypedDict):
    """One trial of an experiment's detail."""

    trial_id: int
    state: str
    value: float | None
    params: dict[str, object]
    labels: dict[str, object]
    started: float
    queued: bool  # sent to its worker, waiting there behind another trial (its state is "running")
    began: float | None  # when it began to run; null while queued
    duration: float | None  # null while it runs: the views count from ``began`` (TrialRecord.seconds)
    steps: int
    attempts: int
    checkpoint_step: int | None  # its newest checkpoint's step (jupyter_dist.checkpoint)
    resumed_from: int | None  # the step its current attempt resumed from
    last: dict[str, float | None]
    error: str | None
    result: str | None  # a data-parallel trial's returned value (rank 0's), as its repr
    constraints: NotRequired[list[float] | None]  # hpo(constraints=): each <= 0 when it holds; from 0.5
    restarts: NotRequired[list[Restart]]  # an elastic data-parallel trial's regroups, oldest first; from 0.5
    # Several objectives: each one's value, by its metric (the first is ``value``; a running trial's latest);
    # null with one objective (``value``); after 0.5
    values: NotRequired[dict[str, float | None] | None]
    # Why a failed trial failed ("memory": it ran out of memory; "lost", "trial", ...: protocol ErrorKind); null
    # for any other trial; after 0.5
    error_kind: NotRequired[str | None]


class BestTrial(TypedDict):
    """The best completed trial (an experiment with an objective only)."""

    trial_id: int
    value: float
    params: dict[str, object]


class DefinitionJson(TypedDict):
    """An experiment's definition as the store keeps it (_codec.definition_to_json)."""

    kind: str
    name: str
    metric: str | None
    mode: Mode
    scope: NotRequired[str]  # objective_scope=: which reports make a trial's value (stores before it: "last")
    objectives: NotRequired[list[tuple[str, Mode]]]  # several objectives: [metric, mode] each; first: metric
    space: dict[str, dict[str, Any]]  # per argument: {"uniform": [lo, hi], "log": ...}, {"choice": [...]}...
    total: int | None
    max_steps: int | None
    timeout: float | None
    dashboard_link: str | None
    id: str
    created: float
    details: dict[str, Any]  # the sampler and pruner, an ablation study's variants...


class ExperimentDetail(_ExperimentFields):
    """GET /jupyter-dist/api/experiments/<id>, and the kernel's snapshot of a finished run (store.experiment_detail
    builds both)."""

    best: BestTrial | None
    error: str | None  # why it failed or was interrupted
    # What its end says: the error, or how a planned end came (a target reached); snapshots before 0.5 lack it.
    message: NotRequired[str | None]
    definition: DefinitionJson
    about: NotRequired[dict[str, Any]]  # the REST API's only: the function's source, versions, cluster
    # Trials by state (those with none left out), the running ones still queued on a worker as "queued" (not
    # counted as "running"); and how many trials there are in all. After 0.5
    counts: NotRequired[dict[str, int]]
    trial_count: NotRequired[int]
    running: NotRequired[list[TrialSummary]]  # the running trials (queued ones included), by id; after 0.5
    # The first page of the trials, best first (store.best_first), TRIALS_PAGE of them (the saved snapshot:
    # SNAPSHOT_TRIALS); GET .../trials pages through the rest. Snapshots before 0.5 have every trial, by id.
    trials: list[TrialSummary]


class TrialsPage(TypedDict):
    """GET .../trials?offset=&limit=&sort=&state=: a page of an experiment's trials, ``sort`` "best" (best first,
    as the detail's ``trials``) or "id", of one ``state`` or all."""

    trials: list[TrialSummary]
    offset: int
    total: int  # the trials of that state (or all): past offset + len(trials), more pages


class MetricsPage(TypedDict):
    """GET .../metrics?since=<cursor>&limit=: reports in arrival order after the cursor."""

    columns: list[str]  # ["trial_id", "attempt", "step", "sent_at", "metrics"]
    rows: list[tuple[int, int, int, float, dict[str, float | None]]]
    cursor: int  # pass it as ``since`` to read on
    more: bool  # whether more rows were waiting past ``limit``


class UtilizationPage(TypedDict):
    """GET .../utilization?trial=&since=<cursor>&limit=: what the trials used, sampled about once a second on their
    workers, in arrival order after the cursor (docs/how-to/utilization.md says what each column counts)."""

    columns: list[str]  # ["trial_id", "time", "cpu_percent", "rss_mb", "gpu_util", "gpu_mem_mb"]
    # cpu_percent of one core; rss_mb the worker process's; the GPU's null where NVML read no device of the trial
    rows: list[tuple[int, float, float, float, float | None, float | None]]
    cursor: int  # pass it as ``since`` to read on
    more: bool  # whether more rows were waiting past ``limit``


class TrialLogs(TypedDict):
    """GET .../logs/<trial_id>: the trial's captured output and traceback."""

    trial_id: int
    stdout: str
    stderr: str
    error: str | None


class ParamImportances(TypedDict):
    """GET .../importances: how much each searched parameter mattered for the objective (an HPO run's), from its
    completed trials; also in the cell's saved bundle."""

    evaluator: str  # e.g. "PED-ANOVA"
    completed: int  # the completed trials they were computed from
    needed: int  # the fewest completed trials that give importances
    importances: dict[str, float] | None  # most important first, summing to 1; None: too few trials


class CurvesSnapshot(TypedDict):
    """Learning curves as the kernel saves them in the cell's output: per trial [id, attempt, steps, values]."""

    metric: str | None
    trials: list[tuple[int, int, list[int], list[float | None]]]


class CurvesPage(CurvesSnapshot):
    """GET .../curves?trials=&points=&since=&limit=: the learning curves of some trials in one answer, from their
    reports after cursor ``since`` (0: all), each thinned to at most ``points`` evenly spread points (its first and
    latest kept), where paging through every report would take seconds; asked again with ``since=cursor``, the
    points reported since. At most ``limit`` trials (the lowest ids): ``more`` says some were left out."""

    cursor: int  # the last report read: pass it as ``since`` to read on
    more: bool  # trials after the last one sent were left out (``limit``): ask for trials=<last + 1>-


class ExperimentBundle(TypedDict):
    """The cell output's data (MIME type application/vnd.jupyter-dist.experiment+json), written by the kernel
    (widgets/_lab.py): ``phase`` while the run starts; ``id`` once it is recorded (the view then follows it
    through the server); ``snapshot`` and ``curves`` when it has ended, so a saved notebook shows it without a
    kernel or a store. Snapshots saved by earlier versions may lack the fields added since."""

    version: int
    phase: NotRequired[str]
    started: NotRequired[float]
    id: NotRequired[str]
    snapshot: NotRequired[ExperimentDetail]
    curves: NotRequired[CurvesSnapshot]
    importances: NotRequired[ParamImportances]  # an HPO run's
    # The parameters in the search space's order: a saved notebook's JSON has every object's keys sorted.
    param_order: NotRequired[list[str]]


class ComparedExperiment(TypedDict):
    """One experiment of a comparison: its row of ``Comparison.summary``, its best value so far as its completed
    trials ended (what ``Comparison.plot()`` draws by trial and by wall time) and an HPO run's importances."""

    id: str
    name: str
    kind: str
    state: str
    trials: int  # trials done, as counted against the total
    best_value: float | None  # null: nothing to optimise, several objectives, or none completed yet
    best_params: dict[str, object] | None
    duration: float  # seconds it has run, its earlier runs included
    started: float
    metric: str | None  # its (first) objective's
    mode: Mode | None
    ended: list[float]  # when each completed trial ended (seconds from the experiment's start), in that order
    best_so_far: list[float | None]  # the best value once each of those had ended
    importances: ParamImportances | None  # an HPO run's (search.importances_report); null for another kind


class ExperimentComparison(TypedDict):
    """GET /jupyter-dist/api/compare?experiments=<name or id>,...: the experiments side by side, in the order
    named, as ``jupyter_dist.compare`` shows them."""

    experiments: list[ComparedExperiment]
