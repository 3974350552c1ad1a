"""HPO as a trial source: Optuna's ask/tell interface drives which parameters each new trial gets."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from .._validate import check_positive
from ..errors import ArgumentError
from ..protocol import Objective, Outcome, ReportRow, TrialState
from ..runtime import TrialSpec
from ..space import constants, searched
from ._pruners import make_pruner
from ._samplers import grid_size, make_sampler


class _QuietTell(logging.Filter):
    """Drops Optuna's INFO lines (study created, each trial told; the live view shows them) while we call it;
    the user's own Optuna logging is untouched. A filter, because set_verbosity() clears logging's caches."""

    active = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not getattr(self.active, "on", False)


_quiet = _QuietTell()
# Logger filters see only records logged to that very logger, so attach to the modules that log per trial.
for _name in ("optuna.study.study", "optuna.study._tell", "optuna.storages._in_memory"):
    logging.getLogger(_name).addFilter(_quiet)


@contextlib.contextmanager
def _quiet_optuna():
    _quiet.active.on = True
    try:
        yield
    finally:
        _quiet.active.on = False


# See OptunaSearch.report: batches up to this many reports are judged step by step; larger ones are sampled.
STEP_BY_STEP_BATCH = 10
HIGH_RATE_INTERVAL = 0.05


class OptunaSearch:
    """Asks Optuna for each next trial's parameters, feeds it the trials' reports (for pruning), and tells it
    how each trial ended."""

    def __init__(
        self,
        space: dict[str, Any],
        *,
        trials: int | None,
        objective: Objective,
        sampler: Any = "tpe",
        pruner: Any = None,
        max_steps: int | None = None,
        seed: int | None = None,
        unlimited: bool = False,
    ) -> None:
        import optuna

        self.searched = searched(space)
        self.constants = constants(space)
        self.distributions = {name: s.to_optuna(name) for name, s in self.searched.items()}
        self.objective = objective
        if sampler == "grid":
            size = grid_size(self.searched)
            trials = size if trials is None else min(trials, size)
        if trials is None and not unlimited:
            raise ArgumentError("trials=None searches until timeout=: give a timeout, or a number of trials")
        check_positive("trials", trials)
        self.total = trials
        pruner = make_pruner(pruner, max_steps)
        self.prunes = not isinstance(pruner, optuna.pruners.NopPruner)
        with _quiet_optuna():
            self.study = optuna.create_study(
                # Hyperband assigns trials to brackets by hashing the study name: seed it too, so that a seeded
                # search prunes the same trials every time.
                study_name=None if seed is None else f"jupyter_dist-seed-{seed}",
                direction=objective.direction.optuna,
                sampler=make_sampler(sampler, self.searched, seed),
                pruner=pruner,
            )
        self._pending: dict[int, Any] = {}
        self._steps_seen: dict[int, set[int]] = {}
        self._last_sampled: dict[int, float] = {}
        self._asked = 0
        self._next_id = 0
        self._reruns: list[
            tuple[int, dict[str, Any]]
        ] = []  # a resumed search's unfinished trials: (id, params)

    def resume(self, finished: list, rerun: list, curves: dict[int, dict[int, float]]) -> None:
        """Continue a stored search: tell Optuna the ``finished`` trials (records: completed, pruned, failed),
        with their objective's ``curves`` (trial id -> step -> value) so pruning rungs include them, and
        queue the ``rerun`` trials' parameters (those a dead kernel left running) to be asked first. They all
        count towards ``total``; new trial ids follow the stored ones."""
        import optuna

        states = {
            TrialState.COMPLETED: optuna.trial.TrialState.COMPLETE,
            TrialState.PRUNED: optuna.trial.TrialState.PRUNED,
            TrialState.FAILED: optuna.trial.TrialState.FAIL,
        }
        with _quiet_optuna():
            for rec in finished:
                completed = rec.state is TrialState.COMPLETED
                params = self._optuna_params(rec.params)
                self.study.add_trial(
                    optuna.trial.create_trial(
                        params=params,
                        distributions=self.distributions,
                        value=rec.value if completed else None,
                        state=states[rec.state],
                        intermediate_values=curves.get(rec.trial_id, {}),
                        system_attrs=self._grid_attrs(params),
                    )
                )
            for rec in rerun:
                self.study.enqueue_trial(self._optuna_params(rec.params), skip_if_exists=False)
        # Optuna asks the enqueued trials first, in order: each goes on from its stored trial's checkpoints.
        self._reruns = [(rec.trial_id, rec.params) for rec in rerun]
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
        return {"grid_id": sampler._all_grids.index(point), "search_space": sampler._search_space}

    def _optuna_params(self, params: dict[str, Any]) -> dict[str, Any]:
        return {name: space.to_optuna_value(params[name]) for name, space in self.searched.items()}

    def next_trial(self) -> TrialSpec | None:
        if self.total is not None and self._asked >= self.total:
            return None
        with _quiet_optuna():
            trial = self.study.ask(self.distributions)
        self._asked += 1
        # Our trial ids count on from the stored ones; a fresh search's equal Optuna's trial numbers.
        trial_id, self._next_id = self._next_id, self._next_id + 1
        self._pending[trial_id] = trial
        params = dict(self.constants)
        params.update({name: self.searched[name].from_optuna(v) for name, v in trial.params.items()})
        continues = None
        if self._reruns and self._reruns[0][1] == params:
            continues = self._reruns.pop(0)[0]
        return TrialSpec(trial_id, params, continues=continues)

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

    def tell(self, outcome: Outcome) -> None:
        import optuna

        trial = self._pending.pop(outcome.trial_id)
        self._steps_seen.pop(outcome.trial_id, None)
        self._last_sampled.pop(outcome.trial_id, None)
        with _quiet_optuna():
            state = TrialState(outcome.state)
            if state is TrialState.COMPLETED:
                self.study.tell(trial, outcome.value)
            elif state is TrialState.FAILED:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:  # pruned or stopped: Optuna keeps its last intermediate value
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
