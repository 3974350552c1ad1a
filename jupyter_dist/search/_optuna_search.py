"""HPO as a trial source: Optuna's ask/tell interface drives which parameters each new trial gets."""

from __future__ import annotations

import copy
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._validate import check_positive
from ..errors import ArgumentError, SearchSpaceError
from ..protocol import Objective, Outcome, ReportRow, TrialState, derive_seed
from ..space import accepted_arguments, constants, is_space_function, searched
from ..trials import TrialSpec
from ._define_by_run import distributions_from_json, distributions_to_json, suggest
from ._enqueue import ENQUEUED, check_enqueue
from ._history import forgetful_storage, needs_history
from ._pareto import ParetoPruner
from ._pruners import make_pruner
from ._quiet import quiet_optuna

if TYPE_CHECKING:
    import optuna
from ._samplers import grid_size, make_sampler

# See OptunaSearch.report: batches up to this many reports are judged step by step; larger ones are sampled.
STEP_BY_STEP_BATCH = 10
HIGH_RATE_INTERVAL = 0.05


class OptunaSearch:
    """Asks Optuna for each next trial's parameters, feeds it the trials' reports (for pruning), and tells it
    how each trial ended."""

    def __init__(
        self,
        space: dict[str, Any] | Callable,
        *,
        trials: int | None,
        objective: Objective,
        sampler: Any = "tpe",
        pruner: Any = None,
        max_steps: int | None = None,
        seed: int | None = None,
        unlimited: bool = False,
        fn: Callable | None = None,
        enqueue: list[dict[str, Any]] | None = None,
        window: int | None = None,
    ) -> None:
        """``space``: a dict of space objects and constants, or a function ``space(trial)`` (define-by-run; then
        ``fn``, the training function, is what each trial's suggested names are checked against). ``enqueue``:
        configurations asked first, in order (checked here, before any work starts). ``window``: the newest
        finished trials the study keeps for a sampler or pruner that reads them (``hpo(sampler_window=)``)."""
        import optuna

        # A define-by-run space: Optuna's trial calls it; its distributions are known trial by trial.
        self.space_function = space if is_space_function(space) else None
        if self.space_function is not None and sampler == "grid":
            raise SearchSpaceError(
                "sampler='grid' needs a dict of space.choice([...]) arguments: a function search space says "
                "its parameters only as each trial runs; use another sampler, or write the grid as a dict"
            )
        self.fn = fn
        self._accepted = accepted_arguments(fn) if fn is not None else None
        self.searched = {} if is_space_function(space) else searched(space)
        self.constants = {} if is_space_function(space) else constants(space)
        self.distributions = {name: s.to_optuna(name) for name, s in self.searched.items()}
        self.objective = objective
        # Known configurations: as given (each trial's label) and as Optuna holds them (what is enqueued).
        self._known, self._known_optuna = check_enqueue(enqueue, space, fn, trials, sampler)
        if sampler == "grid":
            size = grid_size(self.searched)
            trials = size if trials is None else min(trials, size)
        if trials is None and not unlimited:
            raise ArgumentError("trials=None searches until timeout=: give a timeout, or a number of trials")
        check_positive("trials", trials)
        self.total = trials
        # Several objectives: Optuna's pruners judge one value (and its multi-objective trials take no reports),
        # so the search prunes on the non-dominated rank itself (_pareto.py), or not at all.
        self.pareto = pareto_pruner(pruner, objective, max_steps)
        pruner = make_pruner(None if objective.several else pruner, max_steps)
        self.prunes = self.pareto is not None or not isinstance(pruner, optuna.pruners.NopPruner)
        optuna_sampler = make_sampler(sampler, self.searched, seed, several=objective.several)
        # Random, grid and QMC with no pruner need no finished trial to go on: the study keeps none but a few
        # (_history.py); the record keeps them all. Another sampler or a pruner reads them: all of them, or the
        # newest ``window``, which bounds their time per trial.
        check_positive("sampler_window", window)
        reads = needs_history(optuna_sampler, pruner)
        self.keeps_history = reads and window is None
        with quiet_optuna():
            self.study = optuna.create_study(
                storage=None if self.keeps_history else forgetful_storage(window if reads and window else 0),
                # Hyperband assigns trials to brackets by hashing the study name: seed it too, so that a seeded
                # search prunes the same trials every time.
                study_name=None if seed is None else f"jupyter_dist-seed-{seed}",
                directions=[d.optuna for d in objective.directions],
                sampler=optuna_sampler,
                pruner=pruner,
            )
        self._pending: dict[int, Any] = {}
        self._steps_seen: dict[int, set[int]] = {}
        self._last_sampled: dict[int, float] = {}
        self._asked = 0
        self._next_id = 0
        # What each trial waiting in Optuna's queue is (Optuna asks them first, in the order they were enqueued):
        # a resumed search's unfinished trial (its record), or a known configuration (its index in _known).
        self._waiting: deque[tuple[str, Any]] = deque()
        self._known_enqueued = False
        # our trial id -> Optuna's trial number: every trial's, or (no history kept) the running trials' and the
        # last one told (_told_last)
        self._numbers: dict[int, int] = {}
        self._told_last: int | None = None
        self._sampler_choice, self._seed = sampler, seed
        self._vectors: dict[int, dict[str, float]] = {}  # several objectives: each trial's newest of each

    def tell_earlier(self, trials: list) -> None:
        """Tell the sampler earlier experiments' trials (Optuna trials, hpo(warm_start=)) before it asks: they are
        the study's, not this run's (none of our trial ids)."""
        with quiet_optuna():
            self.study.add_trials(trials)

    def resume(self, finished: list, rerun: list, curves: dict[int, dict[int, float]]) -> None:
        """Continue a stored search: tell Optuna the ``finished`` trials (records: completed, pruned, failed),
        with their objective's ``curves`` (trial id -> step -> value) so pruning rungs include them, and
        queue the ``rerun`` trials' parameters (those a dead kernel left running) to be asked first. They all
        count towards ``total``; new trial ids follow the stored ones. A seeded sampler chosen by name goes on
        from a seed of its own (the seed and how many trials were stored): seeded as the first run was, it would
        propose that run's first points again. Not the grid: its trial numbers index a grid its seed shuffled,
        so the stored trials' numbers say which points ran only in the first run's order."""
        import optuna

        if (
            self._seed is not None
            and isinstance(self._sampler_choice, str)
            and self._sampler_choice != "grid"
        ):
            stored = len(finished) + len(rerun)
            self.study.sampler = make_sampler(
                self._sampler_choice,
                self.searched,
                self._seed + stored,
                several=self.objective.several,
            )

        states = {
            TrialState.COMPLETED: optuna.trial.TrialState.COMPLETE,
            TrialState.PRUNED: optuna.trial.TrialState.PRUNED,
            TrialState.FAILED: optuna.trial.TrialState.FAIL,
        }
        with quiet_optuna():
            for rec in finished:
                completed = rec.state is TrialState.COMPLETED
                params = self._optuna_params(rec)
                values = self.objective.values(rec.value, rec.last) if completed else None
                self.study.add_trial(
                    optuna.trial.create_trial(
                        params=params,
                        distributions=self._distributions_of(rec),
                        values=values,
                        state=states[rec.state]
                        if not completed or values is not None
                        else states[TrialState.FAILED],
                        # a multi-objective trial takes no intermediate values
                        intermediate_values={} if self.objective.several else curves.get(rec.trial_id, {}),
                        system_attrs=self._grid_attrs(params),
                        constraints=constraints_of(rec.constraints),
                    )
                )
                if self.keeps_history:
                    self._numbers[rec.trial_id] = self.study.get_trials(deepcopy=False)[-1].number
            for rec in rerun:
                self.study.enqueue_trial(self._optuna_params(rec), skip_if_exists=False)
                # Optuna asks the enqueued trials first, in order: each goes on from its stored trial's
                # checkpoints.
                self._waiting.append(("rerun", rec))
        # A known configuration a stored trial ran (or left unfinished, to run again above) is not run again
        # (Optuna's skip_if_exists; theirs reads fixed_params, which the stored trials do not keep).
        ran = [rec.labels.get(ENQUEUED) for rec in [*finished, *rerun]]
        known = [(c, o) for c, o in zip(self._known, self._known_optuna, strict=True) if c not in ran]
        self._known, self._known_optuna = [c for c, _ in known], [o for _, o in known]
        self._asked = len(finished)
        self._next_id = 1 + max((rec.trial_id for rec in [*finished, *rerun]), default=-1)

    def _grid_attrs(self, params: dict[str, Any]) -> dict[str, Any]:
        """What GridSampler marks its own trials with, so a told trial's grid point counts as visited (it
        reads only these; Optuna has no public way to say it)."""
        import optuna

        sampler = self.study.sampler
        if not isinstance(sampler, optuna.samplers.GridSampler):
            return {}
        point = tuple(params[name] for name in sampler._param_names)
        if point not in sampler._all_grids:
            return {}
        grid_id = sampler._all_grids.index(point)
        if hasattr(sampler, "finished"):  # ours (_samplers.ask_tell_grid_sampler): it counts the points run
            sampler.finished(grid_id)
        return {"grid_id": grid_id, "search_space": sampler._search_space}

    def _optuna_params(self, rec) -> dict[str, Any]:
        """A stored trial's searched parameters as Optuna holds them."""
        if self.space_function is not None:
            return {name: rec.params[name] for name in rec.distributions or {}}
        return {name: space.to_optuna_value(rec.params[name]) for name, space in self.searched.items()}

    def _distributions_of(self, rec) -> dict[str, Any]:
        if self.space_function is not None:
            return distributions_from_json(rec.distributions or {})
        return self.distributions

    def _enqueue_known(self) -> None:
        """Enqueue the known configurations, behind a resumed search's unfinished trials: at the first ask, once
        resume() has said which of them ran already."""
        self._known_enqueued = True
        with quiet_optuna():
            for index, params in enumerate(self._known_optuna):
                self.study.enqueue_trial(params, skip_if_exists=False)
                self._waiting.append(("known", index))

    def next_trial(self) -> TrialSpec | None:
        if self.total is not None and self._asked >= self.total:
            return None
        if not self._known_enqueued:
            self._enqueue_known()
        with quiet_optuna():
            trial = self.study.ask() if self.space_function else self.study.ask(self.distributions)
        self._asked += 1
        # Our trial ids count on from the stored ones; a fresh search's equal Optuna's trial numbers.
        trial_id, self._next_id = self._next_id, self._next_id + 1
        self._pending[trial_id] = trial
        self._numbers[trial_id] = trial.number
        distributions = None
        if self.space_function is not None:
            try:
                params = suggest(self.space_function, trial, self.fn, self._accepted)
            except SearchSpaceError:
                import optuna

                del self._pending[trial_id]
                if not self.keeps_history:
                    del self._numbers[trial_id]
                with quiet_optuna():
                    self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                raise
            distributions = distributions_to_json(trial.distributions)
        else:
            params = dict(self.constants)
            params.update({name: self.searched[name].from_optuna(v) for name, v in trial.params.items()})
        continues, labels = None, {}
        which: Any  # a re-run's TrialRecord, or a known configuration's index
        what, which = self._waiting.popleft() if self._waiting else (None, None)
        if what == "rerun":
            continues, labels = which.trial_id, dict(which.labels)
        elif what == "known":
            labels = {ENQUEUED: self._known[which]}
        seed = None if self._seed is None else derive_seed(self._seed, trial_id)
        return TrialSpec(
            trial_id, params, labels=labels, continues=continues, distributions=distributions, seed=seed
        )

    @property
    def enqueued(self) -> list[dict[str, Any]]:
        """The known configurations still to run first, as given (a resumed search leaves out those it ran)."""
        return list(self._known)

    def frozen_trial(self, trial_id: int) -> optuna.trial.FrozenTrial:
        """The ``optuna.trial.FrozenTrial`` of our trial ``trial_id`` in the search's study, as told (its state,
        value, params, distributions, intermediate values); a copy."""
        number = self._numbers.get(trial_id)
        if number is None:
            raise ArgumentError(
                f"trial_id={trial_id!r}: this search has no such trial"
                if self.keeps_history
                else f"trial_id={trial_id!r}: this search's study keeps only its running trials and the last "
                "one told (its sampler needs no history)"
            )
        storage = self.study._storage
        return copy.deepcopy(
            storage.get_trial(storage.get_trial_id_from_study_id_trial_number(self.study._study_id, number))
        )

    def keep_history(self) -> None:
        """Keep every trial in the search's study from now on, as Optuna's own storage does (an Optuna callback
        that reads ``study.trials``): call it before the first trial."""
        if not self.keeps_history:
            self.study._storage.forget = False  # type: ignore[attr-defined]  # ours: _history.forgetful_storage
            self.keeps_history = True

    def remaining(self) -> int | None:
        return None if self.total is None else max(0, self.total - self._asked)

    def report(self, trial_id: int, batch: list[ReportRow]) -> bool:
        """Give Optuna a trial's new reports of the objective; True when its pruner says stop.

        A trial reporting at a training loop's pace (batches of up to STEP_BY_STEP_BATCH reports, i.e. below
        ~200 reports a second) gets every step reported and judged, so decisions do not depend on batching and a
        seeded sequential run prunes the same trials every time. A trial reporting faster is sampled: its latest
        step, at most every HIGH_RATE_INTERVAL. Optuna's in-memory trials copy their intermediate values on
        every decision (30-140 us, growing with the steps), so judging every one of 20,000 steps a second would
        leave the kernel seconds behind.
        """
        trial = self._pending.get(trial_id)
        if trial is None:
            return False
        if self.pareto is not None:
            return self._report_vectors(self.pareto, trial_id, batch)
        seen = self._steps_seen.setdefault(trial_id, set())
        if len(batch) > STEP_BY_STEP_BATCH:
            now = time.monotonic()
            if now - self._last_sampled.get(trial_id, 0.0) < HIGH_RATE_INTERVAL:
                return False
            self._last_sampled[trial_id] = now
            batch = [report for report in batch if self.objective.intermediate(report[1]) is not None][-1:]
        for step, metrics, _ in batch:
            value = self.objective.intermediate(metrics)
            # Optuna keeps the first value of a step; a re-run attempt repeats the steps.
            if value is None or step in seen:
                continue
            seen.add(step)
            trial.report(value, step)
            if trial.should_prune():
                return True
        return False

    def _report_vectors(self, pareto: ParetoPruner, trial_id: int, batch: list[ReportRow]) -> bool:
        """Several objectives: each step's vector (a metric a step leaves out keeps its newest value) to the
        Pareto pruner, step by step."""
        newest = self._vectors.setdefault(trial_id, {})
        metrics_wanted = [m for m in self.objective.metrics if m is not None]  # several objectives: all named
        for step, metrics, _ in batch:
            newest.update({name: metrics[name] for name in metrics_wanted if name in metrics})
            if len(newest) == len(metrics_wanted) and pareto.report(
                trial_id, step, [newest[name] for name in metrics_wanted]
            ):
                return True
        return False

    def tell(self, outcome: Outcome) -> None:
        import optuna

        trial = self._pending.pop(outcome.trial_id)
        self._steps_seen.pop(outcome.trial_id, None)
        self._last_sampled.pop(outcome.trial_id, None)
        self._vectors.pop(outcome.trial_id, None)
        if not self.keeps_history:  # the study keeps the last trial told only
            if self._told_last is not None:
                self._numbers.pop(self._told_last, None)
            self._told_last = outcome.trial_id
        with quiet_optuna():
            state = TrialState(outcome.state)
            if state is TrialState.COMPLETED:
                for key, value in constraints_of(outcome.constraints).items():
                    trial.set_constraint(key, value)
                values = self.objective.values(outcome.value, outcome.last)
                self.study.tell(trial, values if self.objective.several else outcome.value)
            elif state is TrialState.FAILED:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:  # pruned or stopped: Optuna keeps its last intermediate value
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)


def constraints_of(constraints: list[float] | None) -> dict[str, float]:
    """A trial's constraints as Optuna 5 keeps them (``Trial.set_constraint``): by name, here their index."""
    return {str(i): float(c) for i, c in enumerate(constraints or ())}


# The pruner a multi-objective search gets unless told otherwise (hpo()'s default pruner is "asha": one value).
DEFAULT_PARETO = "pareto"


def pareto_pruner(pruner: Any, objective: Objective, max_steps: int | None) -> ParetoPruner | None:
    """The Pareto pruner of a search with several objectives (``pruner`` "pareto", or hpo()'s default), None for
    none; a single-objective pruner given with several objectives is refused, with the reason."""
    if not objective.several:
        if pruner == DEFAULT_PARETO:
            raise ArgumentError(
                "pruner='pareto' stops trials by their non-dominated rank: it is for several objectives "
                "(metric=[...]); with one, use 'asha', 'median', 'hyperband' or None"
            )
        return None
    if pruner is None:
        return None
    if pruner == DEFAULT_PARETO or pruner is DEFAULT_PRUNER:
        return ParetoPruner(objective.directions, max_steps)
    raise ArgumentError(
        f"pruner={pruner!r} judges one objective, and this search has {len(objective.metrics)} "
        f"({', '.join(map(str, objective.metrics))}): Optuna cannot prune a multi-objective study. Use pruner='pareto' "
        "(successive halving on the non-dominated rank, the default here) or pruner=None"
    )


class _DefaultPruner(str):
    """hpo()'s default pruner, "asha", told apart from an "asha" the user wrote (a str literal is interned, so
    only a str of another type is sure to be another object): with several objectives it means "pareto"."""


DEFAULT_PRUNER = _DefaultPruner("asha")
