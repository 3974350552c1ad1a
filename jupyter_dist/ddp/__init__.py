"""Data-parallel PyTorch training on Dask workers: prepare(), the rank's trial, and the run's results."""

from ._context import devices, is_main, rank, world_size
from ._experiment import DataParallelExperiment
from ._prepare import prepare, unwrap
from ._source import BACKENDS, SingleRun, check_data_parallel
from ._trial import DataParallelTrial

__all__ = [
    "BACKENDS",
    "DataParallelExperiment",
    "DataParallelTrial",
    "SingleRun",
    "check_data_parallel",
    "devices",
    "is_main",
    "prepare",
    "rank",
    "unwrap",
    "world_size",
]
