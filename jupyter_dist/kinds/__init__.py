"""The kinds of experiment, one registry entry each: how a kind's arguments become a definition, a trial function
and a trial source, how it continues a stored run, its Experiment class and its ``%%distribute`` options, over the
``RunOptions`` every kind shares. hpo(), ablation(), data_parallel(), load() and the magic look kinds up here: a
new kind is one new entry, registered below."""

from ._ablation import AblationStudy
from ._base import (
    Kind,
    MagicSpec,
    check_same_objective,
    experiment_of,
    finished_and_rerun,
    kind_of,
    register,
    registered,
)
from ._ddp import DataParallelRun
from ._hpo import HyperparameterSearch
from ._pbt import PopulationBasedTraining
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._spec import Entry, Spec, option

# The magic lists the kinds' options in this order.
register(HyperparameterSearch())
register(PopulationBasedTraining())
register(AblationStudy())
register(DataParallelRun())

__all__ = [
    "Kind",
    "Entry",
    "MagicSpec",
    "RunOptions",
    "Spec",
    "TrialPlan",
    "check_same_objective",
    "experiment_of",
    "finished_and_rerun",
    "kind_of",
    "option",
    "register",
    "registered",
]
