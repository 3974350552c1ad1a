"""The search's Optuna study without its history, for the samplers that need none.

Optuna's in-memory storage keeps every trial as a FrozenTrial (~1.1 KB each, its params, distributions and
attributes), and its samplers read them back at every ask. Random search reads none; the grid sampler reads only
which grid points were started (``_samplers.AskTellGridSampler`` counts them itself, a byte a point); QMC reads
only the distributions of its first finished trial. With those samplers and no pruner (Optuna's pruners compare a
trial with the finished ones: median and ASHA read their intermediate values and rungs, Hyperband its brackets'),
the study keeps no finished trial but a few: the first completed or pruned one (QMC's search space), the best
one (``study.best_trial``) and the last one told (the Optuna callbacks' trial). What every trial was is the
experiment's record, and ``Experiment.study`` is rebuilt from it (``_study.study_of``).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterator
from typing import Any

from ._samplers import ask_tell_grid_sampler


def needs_history(sampler: Any, pruner: Any) -> bool:
    """Whether the study must keep its finished trials for ``sampler`` and ``pruner`` (Optuna's instances): any
    pruner but Optuna's NopPruner does, and any sampler but random, our grid and QMC drawing its first point at
    random (a subclass may read what its parent did not: it keeps them)."""
    import optuna

    if type(pruner) is not optuna.pruners.NopPruner:
        return True
    if type(sampler) is optuna.samplers.RandomSampler or isinstance(sampler, ask_tell_grid_sampler()):
        return False
    if type(sampler) is optuna.samplers.QMCSampler:
        return type(sampler._independent_sampler) is not optuna.samplers.RandomSampler
    return True


class _Trials:
    """One study's trials by number, in place of InMemoryStorage's list: its length is the count of trials ever
    made (Optuna numbers a new trial ``len(trials)``), and a finished trial dropped leaves no hole to fill."""

    def __init__(self) -> None:
        self._by_number: dict[int, Any] = {}
        self._count = 0

    def append(self, trial: Any) -> None:
        self._by_number[self._count] = trial
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):  # trials[start:]: InMemoryStorage's look for waiting trials
            start = key.start or 0
            return [trial for number, trial in self._by_number.items() if number >= start]
        return self._by_number[key]

    def __setitem__(self, number: int, trial: Any) -> None:
        self._by_number[number] = trial

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._by_number.values()))

    def __copy__(self) -> list:
        return list(self._by_number.values())

    def __deepcopy__(self, memo: dict) -> list:
        return copy.deepcopy(list(self._by_number.values()), memo)

    def drop(self, number: int) -> None:
        del self._by_number[number]

    @property
    def kept(self) -> int:
        return len(self._by_number)


def forgetful_storage(window: int = 0):
    """An Optuna in-memory storage that drops each finished trial once nothing needs it (see the module's
    docstring); waiting and running trials are kept as Optuna keeps them. ``window``: the newest finished trials
    it keeps besides (``hpo(sampler_window=)``: what a learning sampler and a pruner then see)."""
    import optuna

    class ForgetfulStorage(optuna.storages.InMemoryStorage):
        def __init__(self) -> None:
            super().__init__()
            # study id -> role ("first", "best", "last") -> the finished trial's id kept for it
            self._roles: dict[int, dict[str, int]] = {}
            # study id -> the newest ``window`` finished trials' ids, oldest first (and as a set)
            self._recent: dict[int, tuple[deque[int], set[int]]] = {}
            self.forget = True  # False: keep every trial from now on, as InMemoryStorage does

        def create_new_study(self, directions, study_name=None) -> int:
            with self._lock:
                study_id = super().create_new_study(directions, study_name)
                self._studies[study_id].trials = _Trials()  # type: ignore[assignment]
                self._roles[study_id] = {}
                self._recent[study_id] = (deque(), set())
                return study_id

        def delete_study(self, study_id: int) -> None:
            with self._lock:
                super().delete_study(study_id)
                self._roles.pop(study_id, None)
                self._recent.pop(study_id, None)

        def create_new_trial(self, study_id: int, template_trial=None) -> int:
            with self._lock:
                trial_id = super().create_new_trial(study_id, template_trial)
                if template_trial is not None and template_trial.state.is_finished():
                    self._finished(trial_id)
                return trial_id

        def set_trial_state_values(self, trial_id: int, state, values=None) -> bool:
            with self._lock:
                changed = super().set_trial_state_values(trial_id, state, values)
                if changed and state.is_finished():
                    self._finished(trial_id)
                return changed

        def _finished(self, trial_id: int) -> None:
            if not self.forget:
                return
            study_id, number = self._trial_id_to_study_id_and_number[trial_id]
            info = self._studies[study_id]
            roles = self._roles[study_id]
            before = set(roles.values())
            if window:
                recent, recent_ids = self._recent[study_id]
                recent.append(trial_id)
                recent_ids.add(trial_id)
                if len(recent) > window:
                    oldest = recent.popleft()
                    recent_ids.discard(oldest)
                    before.add(oldest)
            # QMC's search space: its first completed or pruned trial's distributions (optuna.samplers._qmc)
            suggested = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
            if "first" not in roles and info.trials[number].state in suggested:
                roles["first"] = trial_id
            roles["last"] = trial_id
            if info.best_trial_id is not None:
                roles["best"] = info.best_trial_id
            kept = set(roles.values()) | (self._recent[study_id][1] if window else set())
            for gone in before - kept:
                _, gone_number = self._trial_id_to_study_id_and_number.pop(gone)
                info.trials.drop(gone_number)  # type: ignore[attr-defined]

        def kept_trials(self, study_id: int) -> int:
            """How many trials the study holds now (running, waiting and the few finished ones kept)."""
            return self._studies[study_id].trials.kept  # type: ignore[attr-defined]

    return ForgetfulStorage()
