"""Where experiments are recorded: the interface a run writes to and results are read from, the in-memory
record, and the store on disk (SQLite) that a journal writes each run to and the catalog reads back."""

from ._base import QUEUED, ExperimentDefinition, ExperimentRecord, TrialRecord, new_experiment_id
from ._catalog import STALE_AFTER_S, NotInStore, list_experiments, read_record, store_path
from ._journal import FLUSH_INTERVAL_S, Journal
from ._memory import InMemoryRecord

__all__ = [
    "FLUSH_INTERVAL_S",
    "QUEUED",
    "STALE_AFTER_S",
    "ExperimentDefinition",
    "ExperimentRecord",
    "InMemoryRecord",
    "NotInStore",
    "Journal",
    "TrialRecord",
    "list_experiments",
    "new_experiment_id",
    "read_record",
    "store_path",
]
