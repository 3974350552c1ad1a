"""What the trial loop (trials/_loop.py) decides of its trials besides starting them: which to stop on their
reports (the source's pruner, the run's stop rule), what each one ended as, and when the experiment has reached
its target.

Asked on the loop's thread only, in the order things arrived: Optuna's study is not shared between threads, and
decisions then follow the reports' order exactly. The rules themselves (a stop rule, a target, constraints) are
trials/_goals.py's; this applies them to the running trials and keeps what they decided.
"""

from __future__ import annotations

from ..protocol import Direction, Objective, Outcome, ReportBatch, ReportRow, ScopedValue, TrialState
from ._goals import Constraints, StopRule
from ._interrupts import StopSignal
from ._seams import RunningTrial, TrialLauncher, TrialSink, TrialSource, TrialWatcher

# The states a trial told to stop may end in on its own (it returned, or raised TrialPruned at its next report).
_ENDED = (TrialState.COMPLETED, TrialState.PRUNED)


class TrialDecisions:
    """The run's decisions on ``objective``: stops go to ``launcher``, pruned trials to ``sink``, reports to
    ``watcher`` (when it wants them); ``stop`` is the run's, requested once a trial reaches ``target``."""

    def __init__(
        self,
        objective: Objective,
        source: TrialSource,
        sink: TrialSink,
        launcher: TrialLauncher,
        stop: StopSignal,
        *,
        watcher: TrialWatcher | None,
        stop_rule: StopRule | None,
        target: float | None,
        constraints: Constraints | None,
    ) -> None:
        self.objective = objective
        self.source = source
        self.sink = sink
        self.launcher = launcher
        self.stop = stop
        self.watcher = watcher
        self.stop_rule = stop_rule  # a trial whose report meets it is stopped and ends completed
        self.target = target  # a completed trial reaching it ends the experiment
        self.constraints = constraints  # evaluated on each completed trial's metrics
        self.pruned: set[int] = set()  # trials the source decided to stop
        self.reached: set[int] = set()  # trials stopped by the stop rule
        self.target_reached: str | None = None  # what reached the target, once a trial has
        # The objective's scope over each running trial's current attempt: (attempt id, its reports so far).
        self.scoped: dict[int, tuple[str, ScopedValue]] | None = {} if objective.scope != "last" else None

    # --- on a trial's reports ------------------------------------------------------------------------------
    def reports(self, trial: RunningTrial, batch: ReportBatch) -> None:
        trial_id, rows = trial.trial_id, batch.rows
        if self.scoped is not None:
            rows = self._scope(batch)
        if self.watcher is not None and self.watcher.wants_reports:
            self.watcher.trial_reported(trial_id, batch.rows)
        if trial_id in self.pruned or trial_id in self.reached:
            return
        rule = self.stop_rule
        if rule is not None and any(rule.met(trial_id, metrics) for _, metrics, _ in batch.rows):
            # It reached its goal: stopped as a pruned trial is (its next report() raises), but completed.
            self.reached.add(trial_id)
            trial.told_to_stop = True
            self.launcher.stop([trial_id])
        elif self.source.prunes and self.source.report(trial_id, rows):
            self._prune(trial)

    def _scope(self, batch: ReportBatch) -> list[ReportRow]:
        """Feed the attempt's reports of the objective to its scope; the rows as the pruner is to see them, the
        objective's value at each step being the scope over the reports up to that step."""
        assert self.scoped is not None  # (a scope other than "last")
        kept = self.scoped.get(batch.trial_id)
        if (
            kept is None or kept[0] != batch.attempt
        ):  # its first reports, or a re-run attempt's (it starts over)
            scoped = self.objective.tracker()
            self.scoped[batch.trial_id] = (batch.attempt, scoped)
        else:
            scoped = kept[1]
        metric, rows = self.objective.metric, []
        for step, metrics, sent_at in batch.rows:
            if metric in metrics:
                metrics = {**metrics, metric: scoped.add(metrics[metric])}
            rows.append([step, metrics, sent_at])
        return rows

    def _prune(self, trial: RunningTrial) -> None:
        self.pruned.add(trial.trial_id)
        trial.told_to_stop = True
        self.sink.trial_pruned(trial.trial_id)
        self.launcher.stop([trial.trial_id])

    # --- on a trial's end --------------------------------------------------------------------------------
    def judged(self, trial_id: int, outcome: Outcome) -> Outcome:
        """The trial's outcome as the run records it: the state of one the run stopped says what stopped it, its
        value is the objective's judgement (over its scope), and a completed one's constraints are evaluated."""
        if trial_id in self.reached and outcome.state in _ENDED:
            outcome.state = TrialState.COMPLETED  # it met the stop rule: it reached its goal
        elif trial_id in self.pruned and outcome.state in _ENDED:
            outcome.state = TrialState.PRUNED  # a trial that never reported again is pruned when it returns
        elif outcome.state is TrialState.PRUNED:
            outcome.state = TrialState.STOPPED  # told to stop by the experiment, not by the pruner
        attempt, scoped = (self.scoped or {}).pop(trial_id, (None, None))
        # An attempt that went on from a checkpoint ends with what the trial reported before it, where it has
        # reported nothing newer.
        outcome.last = {**self.sink.metrics_so_far(trial_id), **outcome.last}
        outcome = self.objective.judge(outcome, scoped if attempt == outcome.attempt else None)
        if self.constraints is not None and outcome.state is TrialState.COMPLETED:
            returned = outcome.returned if isinstance(outcome.returned, dict) else {}
            outcome.constraints = self.constraints.values({**outcome.last, **returned})
        return outcome

    def check_target(self, outcome: Outcome) -> None:
        """A completed trial at the target ends the experiment: no new trials, the running ones stopped."""
        if (
            self.target is None
            or self.target_reached is not None
            or self.stop.requested
            or outcome.state is not TrialState.COMPLETED
            or outcome.value is None
            or not self.objective.reaches(outcome.value, self.target)
        ):
            return
        sign = ">=" if self.objective.direction is Direction.MAX else "<="
        self.target_reached = (
            f"target {self.objective.metric} {sign} {self.target:g} reached by trial {outcome.trial_id} "
            f"({self.objective.metric}={outcome.value:.4g})"
        )
        self.stop.request()
