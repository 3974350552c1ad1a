"""What a run gives the user: ``Experiment`` (results, DataFrames, plots) over the run's record; a population-based
training run's ``PopulationExperiment`` (its members, schedules and lineage); a data-parallel run's
``DataParallelExperiment``."""

from ._data_parallel import DataParallelExperiment
from ._experiment import SHOWN_COUNTS, Best, Experiment, best_first
from ._plots import curve_style
from ._population import PopulationExperiment

__all__ = [
    "SHOWN_COUNTS",
    "Best",
    "DataParallelExperiment",
    "Experiment",
    "PopulationExperiment",
    "best_first",
    "curve_style",
]
