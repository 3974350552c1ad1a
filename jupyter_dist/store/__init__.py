"""Where experiments are recorded: the interface a run writes to and results are read from, and its
implementations (in memory today; on disk next)."""

from ._base import ExperimentDefinition, ExperimentRecord, TrialRecord, new_experiment_id
from ._memory import InMemoryRecord

__all__ = ["ExperimentDefinition", "ExperimentRecord", "InMemoryRecord", "TrialRecord", "new_experiment_id"]
