"""What a run gives the user: ``Experiment`` (results, DataFrames, plots) over the run's record."""

from ._experiment import SHOWN_COUNTS, Best, Experiment, best_first
from ._plots import curve_style

__all__ = ["SHOWN_COUNTS", "Best", "Experiment", "best_first", "curve_style"]
