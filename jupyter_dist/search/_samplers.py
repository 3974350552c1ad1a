"""Sampler names → Optuna samplers. We choose and configure them; Optuna implements them."""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ..errors import ArgumentError, SearchSpaceError
from ..space import Choice, Space

SAMPLERS = ("tpe", "random", "grid", "gp", "cmaes", "nsga2", "nsga3")


def make_sampler(sampler: Any, searched: dict[str, Space], seed: int | None, *, several: bool = False):
    """An Optuna sampler for ``sampler``: one of SAMPLERS or an ``optuna.samplers.BaseSampler`` instance.
    ``several``: the study has several objectives (CMA-ES has only one). Constraints need no setting here: each
    trial's are set on it as it is told (``Trial.set_constraint``, Optuna 5), and the samplers that use them (TPE,
    GP, NSGA-II and -III) read them there."""
    import optuna

    if isinstance(sampler, optuna.samplers.BaseSampler):
        return sampler  # configured by the user, seed included
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ArgumentError(
            f"sampler={sampler!r} is not known; use one of {', '.join(SAMPLERS)} or an Optuna sampler instance"
        )
    if several and sampler == "cmaes":
        raise ArgumentError(
            "sampler='cmaes' optimises one objective; with several use 'tpe', 'nsga2', 'nsga3', 'gp', 'random' "
            "or 'grid'"
        )
    if sampler == "grid":
        return ask_tell_grid_sampler()(grid_of(searched), seed=seed)
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if sampler == "tpe":
        # The constant liar keeps TPE from proposing the same point to several in-flight trials.
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    if sampler == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if sampler == "nsga3":
        # Optuna marks NSGA-III experimental and warns as it is made: printed into the cell of every run that
        # names it. The user chose it by name; the docs say what experimental means for it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.NSGAIIISampler(seed=seed)
    return optuna.samplers.CmaEsSampler(seed=seed)


@functools.cache
def ask_tell_grid_sampler():
    """Optuna's GridSampler for ask/tell, the class made once (Optuna is imported when first needed)."""
    import optuna

    class AskTellGridSampler(optuna.samplers.GridSampler):
        """GridSampler ends ``study.optimize`` when the grid is used up by calling ``study.stop()``, which
        raises under ask/tell; we stop at the grid's size ourselves, so that hook has nothing to do.

        It also keeps which grid points were started and which finished, a byte a point, where Optuna's reads
        them from every trial the study holds: the study need keep no finished trial (_history.py). Optuna
        gives trial number n the grid's n-th point; only past the grid's size (a resumed search) does it look
        for the points not yet run, the same way from these."""

        def __init__(self, search_space: dict[str, Any], seed: int | None = None) -> None:
            super().__init__(search_space, seed=seed)
            self._done = bytearray(self._n_min_trials)  # 1: the point's trial finished
            self._running: set[int] = set()

        def before_trial(self, study, trial) -> None:
            super().before_trial(study, trial)
            grid_id = study._storage.get_trial_system_attrs(trial._trial_id).get("grid_id")
            if grid_id is not None:
                self._running.add(grid_id)

        def after_trial(self, study, trial, state, values) -> None:
            grid_id = trial.system_attrs.get("grid_id")
            if grid_id is not None:
                self.finished(grid_id)

        def finished(self, grid_id: int) -> None:
            """The point ``grid_id`` was run (a trial told, or a resumed search's stored trial)."""
            self._running.discard(grid_id)
            self._done[grid_id] = 1

        def _get_unvisited_grid_ids(self, study) -> list[int]:
            # As Optuna's: the points neither finished nor running; when every point has started, those not
            # finished.
            visited = {grid_id for grid_id, done in enumerate(self._done) if done}
            unvisited = set(range(self._n_min_trials)) - visited - set(self._running)
            if len(unvisited) == 0:
                unvisited = set(range(self._n_min_trials)) - visited
            return list(unvisited)

    return AskTellGridSampler


def grid_of(searched: dict[str, Space]) -> dict[str, list]:
    """The grid Optuna's GridSampler walks: every searched argument must be a choice."""
    not_choices = [name for name, s in searched.items() if not isinstance(s, Choice)]
    if not_choices:
        raise SearchSpaceError(
            f"{', '.join(not_choices)}: sampler='grid' searches only space.choice([...]) arguments; "
            "make these choices or use another sampler"
        )
    return {name: s.to_optuna(name).choices for name, s in searched.items()}


def grid_size(searched: dict[str, Space]) -> int:
    size = 1
    for options in grid_of(searched).values():
        size *= len(options)
    return size
