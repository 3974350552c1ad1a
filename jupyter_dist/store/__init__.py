"""Where experiments are recorded: the interface a run writes to and results are read from, the in-memory
record, the store on disk (SQLite) that a journal writes each run to, and what reads it back: ``read_record``
for the kernel, ``StoreReader`` for the server extension, ``experiment_detail`` for both. The JSON the views read
is declared here (the wire types) and nowhere else; every SQL statement of the package is in this subpackage."""

from ..errors import NotInStore, NotRunning
from ._base import (
    EXTENDED,
    QUEUED,
    ExperimentDefinition,
    ExperimentRecord,
    TrialRecord,
    TrialSink,
    new_experiment_id,
    param_names,
)
from ._catalog import STALE_AFTER_S, list_experiments, read_record, store_path
from ._codec import finite
from ._detail import experiment_detail, trial_summary
from ._journal import FLUSH_INTERVAL_S, Journal
from ._memory import InMemoryRecord
from ._reader import CURVE_POINTS, MAX_CURVE_POINTS, MAX_PAGE, StoreReader
from ._wire import (
    BestTrial,
    CurvesPage,
    CurvesSnapshot,
    DefinitionJson,
    ExperimentBundle,
    ExperimentDetail,
    ExperimentList,
    ExperimentSummary,
    MetricsPage,
    Mode,
    ParamImportances,
    TrialLogs,
    TrialSummary,
)

__all__ = [
    "EXTENDED",
    "FLUSH_INTERVAL_S",
    "CURVE_POINTS",
    "MAX_CURVE_POINTS",
    "MAX_PAGE",
    "QUEUED",
    "STALE_AFTER_S",
    "BestTrial",
    "CurvesPage",
    "CurvesSnapshot",
    "DefinitionJson",
    "ExperimentBundle",
    "ExperimentDefinition",
    "ExperimentDetail",
    "ExperimentList",
    "ExperimentRecord",
    "ExperimentSummary",
    "InMemoryRecord",
    "Journal",
    "MetricsPage",
    "Mode",
    "NotInStore",
    "NotRunning",
    "ParamImportances",
    "StoreReader",
    "TrialLogs",
    "TrialRecord",
    "TrialSink",
    "TrialSummary",
    "experiment_detail",
    "finite",
    "list_experiments",
    "new_experiment_id",
    "param_names",
    "read_record",
    "store_path",
    "trial_summary",
]
