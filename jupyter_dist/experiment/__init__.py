"""What a run gives the user: ``Experiment`` (results, DataFrames, plots) over the run's record; a data-parallel
run's ``DataParallelExperiment`` (a population's and an ablation study's live with their kinds: population/, ablation/)."""

from ._data_parallel import DataParallelExperiment
from ._experiment import Best, Experiment
from ._extend import ExtendWarning, Extension, OneTrial, runs_extensions
from ._frames import best_first
from ._plots import curve_style, warm_start_curves
from ._reproduce import ReproduceWarning, source_hash, source_of
from ._status import SHOWN_COUNTS

__all__ = [
    "SHOWN_COUNTS",
    "Best",
    "DataParallelExperiment",
    "Experiment",
    "ExtendWarning",
    "Extension",
    "OneTrial",
    "ReproduceWarning",
    "best_first",
    "curve_style",
    "runs_extensions",
    "source_hash",
    "source_of",
    "warm_start_curves",
]
