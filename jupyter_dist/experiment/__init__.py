"""What a run gives the user: ``Experiment`` (results, DataFrames, plots) over the run's record."""

from ._experiment import Best, Experiment

__all__ = ["Best", "Experiment"]
