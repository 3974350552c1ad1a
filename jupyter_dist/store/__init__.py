"""Where experiments are recorded: the interface a run writes to and results are read from, the in-memory
record, the store on disk (SQLite) that a journal writes each run to, and what reads it back: ``read_record``
for the kernel, ``StoreReader`` for the server extension, ``experiment_detail`` and ``compared_experiment``
(experiments side by side) for both. The JSON the views read is declared here (the wire types) and nowhere
else; every SQL statement of the package is in this subpackage."""

from ..errors import NotInStore, NotRunning
from ._base import (
    EXTENDED,
    QUEUED,
    ExperimentDefinition,
    TrialRecord,
    best_first,
    new_experiment_id,
    param_names,
)
from ._catalog import STALE_AFTER_S, list_experiments, read_record, store_path
from ._codec import finite
from ._comparison import SUMMARY_COLUMNS, best_so_far, compared_experiment, summary_row
from ._detail import experiment_detail, trial_summary
from ._journal import FLUSH_INTERVAL_S, Journal
from ._memory import InMemoryRecord
from ._reader import CURVE_POINTS, MAX_COMPARED, MAX_CURVE_POINTS, MAX_PAGE, StoreReader
from ._record import ExperimentRecord, TrialSink
from ._wire import (
    BestTrial,
    ComparedExperiment,
    CurvesPage,
    CurvesSnapshot,
    DefinitionJson,
    ExperimentBundle,
    ExperimentComparison,
    ExperimentDetail,
    ExperimentList,
    ExperimentSummary,
    MetricsPage,
    Mode,
    ParamImportances,
    TrialLogs,
    TrialSummary,
    UtilizationPage,
)

__all__ = [
    "EXTENDED",
    "FLUSH_INTERVAL_S",
    "CURVE_POINTS",
    "MAX_COMPARED",
    "MAX_CURVE_POINTS",
    "MAX_PAGE",
    "QUEUED",
    "STALE_AFTER_S",
    "SUMMARY_COLUMNS",
    "BestTrial",
    "ComparedExperiment",
    "CurvesPage",
    "CurvesSnapshot",
    "DefinitionJson",
    "ExperimentBundle",
    "ExperimentComparison",
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
    "UtilizationPage",
    "best_so_far",
    "compared_experiment",
    "experiment_detail",
    "finite",
    "list_experiments",
    "new_experiment_id",
    "best_first",
    "param_names",
    "read_record",
    "store_path",
    "summary_row",
    "trial_summary",
]
