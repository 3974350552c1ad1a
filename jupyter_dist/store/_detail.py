"""The one builder of an experiment's detail, as the REST API serves it and the kernel saves it in a cell: its
trials counted by state, its best and running trials and the first page of its trials best first (not every
trial: a 100,000-trial run's detail stays ~100 KB). From an ``ExperimentRecord`` (``experiment_detail``: the
kernel's live one, or one read back from the store), or from the parts the REST reader reads with SQL
(``detail_of``, store/_experiment_reader.py); ``trial_summary`` is a trial's entry either way."""

from __future__ import annotations

import json

from ..protocol import Objective, TrialState
from ._base import ExperimentDefinition, TrialRecord
from ._codec import definition_to_json, finite, plain
from ._record import ExperimentRecord
from ._wire import BestTrial, ExperimentDetail, TrialSummary

__all__ = ["TRIALS_PAGE", "best_trial", "detail_of", "experiment_detail", "trial_summary"]

# The trials a detail lists in full, best first: the table's first page (GET .../trials pages through the rest).
# 100,000 trials' summaries made a 46 MB detail; 200 of them are ~100 KB.
TRIALS_PAGE = 200
DONE_STATES = {s.value for s in TrialState if s.done}


def trial_summary(rec: TrialRecord, objective: Objective | None = None) -> TrialSummary:
    """A trial as the views show it (run ``finite`` over it for JSON); with several objectives (``objective``),
    each one's value too."""
    summary: TrialSummary = {
        "trial_id": rec.trial_id,
        "state": rec.state.value,
        "value": rec.value,
        "params": {k: plain(v) for k, v in rec.params.items()},
        "labels": {k: plain(v) for k, v in rec.labels.items()},
        "started": rec.started,
        # A queued trial waits behind another on its worker: no time of its own yet.
        "queued": rec.queued,
        "began": None if rec.queued else rec.started,
        "duration": rec.duration,
        "steps": rec.steps,
        "attempts": rec.attempts,
        "checkpoint_step": rec.checkpoint_step,
        "resumed_from": rec.resumed_from,
        "last": dict(rec.last),
        "error": rec.error,
        "error_kind": rec.error_kind.value if rec.error_kind is not None else None,
        "result": rec.result_repr,
        "constraints": rec.constraints,
        "restarts": list(rec.restarts),
        "values": objective.by_metric(rec.value, rec.last)
        if objective is not None and objective.several
        else None,
    }
    return summary


def best_trial(rec: TrialRecord | None) -> BestTrial | None:
    """The best trial as the detail names it: one with a value (None: none completed with one)."""
    if rec is None or rec.value is None:
        return None
    return {
        "trial_id": rec.trial_id,
        "value": rec.value,
        "params": {k: plain(v) for k, v in rec.params.items()},
    }


def detail_of(
    definition: ExperimentDefinition,
    state: str,
    *,
    started: float,
    duration: float,
    error: str | None,
    message: str | None,
    counts: dict[str, int],
    best: TrialRecord | None,
    running: list[TrialRecord],
    page: list[TrialRecord],
    about: dict | None = None,
) -> ExperimentDetail:
    """The detail from its parts, however they were read (the kernel's record, or SQL on the store:
    _experiment_reader.py): ``counts`` by state (``queued`` apart from ``running``), the ``running`` trials, the
    first ``page`` best first."""
    objective = definition.objective
    done = sum(n for s, n in counts.items() if s in DONE_STATES)
    detail: ExperimentDetail = {
        "id": definition.id,
        "name": definition.name,
        "kind": definition.kind,
        "state": state,
        "trials_done": done,
        "trials_total": definition.total,
        "metric": objective.metric,
        "mode": objective.direction.value,
        "started": started,
        "duration": duration,
        # Nothing to optimise (a data-parallel run): no best, though its trials have a value for the table.
        "best": best_trial(best) if objective.metric else None,
        "error": error,
        "message": message,
        "definition": json.loads(definition_to_json(definition)),
        "counts": {s: n for s, n in counts.items() if n},
        "trial_count": sum(counts.values()),
        "running": [trial_summary(rec, objective) for rec in running],
        "trials": [trial_summary(rec, objective) for rec in page],
    }
    if about is not None:
        detail["about"] = about
    return finite(detail)


def experiment_detail(
    record: ExperimentRecord, about: dict | None = None, page: int = TRIALS_PAGE
) -> ExperimentDetail:
    """The experiment as the views show it: the listing's fields, its definition, trials by state, the best and
    the running trials, and the first ``page`` trials best first (GET .../trials pages through the rest),
    JSON-ready (non-finite numbers as None). What it reads of the record does not walk every trial, so a
    100,000-trial run's detail costs what one of a few hundred does.

    Parameters
    ----------
    record
        The kernel's record of a run (live or ended), or a stored one read back with ``read_record``: a run
        read back while it runs ends at its last heartbeat, and one whose kernel is gone is interrupted.
    about
        What the store keeps beside the definition (the function's source, versions, cluster); the REST API
        sends it, the kernel's snapshot has none.
    page
        How many trials, best first, it lists in full.
    """
    definition = record.definition
    return detail_of(
        definition,
        record.state.value,
        started=record.started,
        duration=record.duration(),
        error=record.error,
        message=record.message,
        counts=record.counts(),
        best=record.best() if definition.objective.metric else None,
        running=record.running_records(),
        page=record.ranked(0, page),
        about=about,
    )
