"""Data-parallel PyTorch training on Dask workers: prepare(), rank placement and the rendezvous."""

from ._context import is_main, rank, world_size
from ._experiment import DataParallelExperiment
from ._prepare import prepare, unwrap
from ._trial import BACKENDS, DataParallelTrial, RendezvousError

__all__ = [
    "BACKENDS",
    "DataParallelExperiment",
    "DataParallelTrial",
    "RendezvousError",
    "is_main",
    "prepare",
    "rank",
    "unwrap",
    "world_size",
]
