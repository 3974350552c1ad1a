"""Data-parallel PyTorch training on Dask workers: prepare() (with mixed precision, gradient accumulation and
FSDP), gather(), and the rank's trial (the run's results: experiment.DataParallelExperiment)."""

from ._context import devices, is_main, rank, world_size
from ._fsdp import STRATEGIES
from ._gather import gather, gather_for_metrics
from ._precision import MIXED_PRECISIONS, backward
from ._prepare import prepare, unwrap
from ._source import BACKENDS, SingleRun, check_data_parallel
from ._trial import DataParallelTrial

__all__ = [
    "BACKENDS",
    "DataParallelTrial",
    "MIXED_PRECISIONS",
    "STRATEGIES",
    "SingleRun",
    "backward",
    "check_data_parallel",
    "devices",
    "gather",
    "gather_for_metrics",
    "is_main",
    "prepare",
    "rank",
    "unwrap",
    "world_size",
]
