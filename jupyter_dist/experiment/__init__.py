"""What a run gives the user: ``Experiment`` (results, DataFrames, plots) over the run's record; a data-parallel
run's ``DataParallelExperiment`` (a population's and an ablation study's live with their kinds: population/, ablation/)."""

from ._data_parallel import DataParallelExperiment
from ._experiment import Best, Experiment
from ._frames import best_first
from ._plots import curve_style
from ._reproduce import ReproduceWarning, source_of
from ._status import SHOWN_COUNTS

__all__ = [
    "SHOWN_COUNTS",
    "Best",
    "DataParallelExperiment",
    "Experiment",
    "ReproduceWarning",
    "best_first",
    "curve_style",
    "source_of",
]
