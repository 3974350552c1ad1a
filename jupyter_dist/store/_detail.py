"""The one builder of an experiment's detail, as the REST API serves it and the kernel saves it in a cell: from an
``ExperimentRecord``, whether the kernel's live one or one read back from the store (``read_record``)."""

from __future__ import annotations

import json

from ..protocol import Objective
from ._base import ExperimentRecord, TrialRecord
from ._codec import definition_to_json, finite, plain
from ._wire import ExperimentDetail, TrialSummary

__all__ = ["experiment_detail", "trial_summary"]


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


def experiment_detail(record: ExperimentRecord, about: dict | None = None) -> ExperimentDetail:
    """The experiment as the views show it: the listing's fields, its definition, best trial and every trial's
    summary, JSON-ready (non-finite numbers as None).

    Parameters
    ----------
    record
        The kernel's record of a run (live or ended), or a stored one read back with ``read_record``: a run
        read back while it runs ends at its last heartbeat, and one whose kernel is gone is interrupted.
    about
        What the store keeps beside the definition (the function's source, versions, cluster); the REST API
        sends it, the kernel's snapshot has none.
    """
    definition = record.definition
    objective = definition.objective
    # Nothing to optimise (a data-parallel run): no best, though its trials have a value for the table.
    best = record.best() if objective.metric else None
    detail: ExperimentDetail = {
        "id": definition.id,
        "name": definition.name,
        "kind": definition.kind,
        "state": record.state.value,
        "trials_done": record.done(),
        "trials_total": definition.total,
        "metric": objective.metric,
        "mode": objective.direction.value,
        "started": record.started,
        "duration": record.duration(),
        "best": None
        if best is None or best.value is None  # the best trial is one with a value
        else {
            "trial_id": best.trial_id,
            "value": best.value,
            "params": {k: plain(v) for k, v in best.params.items()},
        },
        "error": record.error,
        "message": record.message,
        "definition": json.loads(definition_to_json(definition)),
        "trials": [trial_summary(rec, objective) for rec in record.trial_records()],
    }
    if about is not None:
        detail["about"] = about
    return finite(detail)
