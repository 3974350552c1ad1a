"""Experiments written to the trackers (MLflow, TensorBoard): a run told as events, the writers, and the export
process that writes a live run's events without slowing the kernel. Nothing here knows the callbacks
(``jupyter_dist.integrations``) or the Experiment class: it reads an experiment through ``Tracked``."""

from ._events import (
    Destination,
    Event,
    ExperimentEnded,
    ExperimentInfo,
    ExperimentStarted,
    Reported,
    Tracked,
    TrialEnded,
    TrialInfo,
    TrialStarted,
    events_of,
    experiment_ended,
    experiment_info,
    export,
    finite,
    require,
)

__all__ = [
    "Destination",
    "Event",
    "ExperimentEnded",
    "ExperimentInfo",
    "ExperimentStarted",
    "Reported",
    "Tracked",
    "TrialEnded",
    "TrialInfo",
    "TrialStarted",
    "events_of",
    "experiment_ended",
    "experiment_info",
    "export",
    "finite",
    "require",
]
