"""Population-based training (Jaderberg et al. 2017), gathered as the ablation study and data-parallel training
are: the population as a trial source (``PopulationSearch``: each member's next segment, exploit and explore),
the perturbations (``Explorer``), and the run's results (``PopulationExperiment``: members, schedules, lineage,
with its plots). ``jupyter_dist.pbt()`` runs it (its kind: kinds/_pbt.py); the package is not named pbt, which
is that function's name on ``jupyter_dist``."""

from ._experiment import PopulationExperiment
from ._explore import Explorer, check_mutations
from ._search import PopulationSearch

__all__ = ["Explorer", "PopulationExperiment", "PopulationSearch", "check_mutations"]
