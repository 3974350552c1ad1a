"""The Dask launcher's data-parallel jobs: starting a trial's ranks, and deciding, once they have all ended, whether
the trial ended or (elastic) goes on at another size.

Each job is a GangTrial (trials/_gang.py) whose ranks run as tasks pinned to distinct workers. An elastic job
(trials/_elastic.py) that lost a worker goes on from its newest checkpoint with the workers it can still have, and
one that finds workers free is asked to end at its next checkpoint to start again larger: either way a new group
of ranks, under the same trial. The launcher (trials/_launcher.py) hands every event of a data-parallel trial here
once it has seen to the trial's own bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol import Outcome, Regrouped, TrialState
from ._channel import clear_trial_on_workers
from ._elastic import (
    FRUITLESS_REGROUPS,
    Elastic,
    Waiting,
    ask_to_regroup,
    below_minimum,
    how_to_go_on,
    why_lost,
)
from ._gang import GangTrial, eligible, eligible_workers, rendezvous
from ._placement import WORKER_CHECK, Placement
from ._seams import TaskEnded, TrialSpec
from ._trial_tasks import TrialTasks


class GangJobs:
    """The running data-parallel trials of one run: ranks placed by ``placement``, submitted through ``tasks``;
    ``elastic`` (None: a job of fixed size) says how far each may shrink and grow."""

    def __init__(
        self,
        client,
        exp_id: str,
        resources: dict[str, float] | None,
        elastic: Elastic | None,
        placement: Placement,
        tasks: TrialTasks,
    ) -> None:
        self.client = client
        self.exp_id = exp_id
        self.resources = resources
        self.elastic = elastic
        self.placement = placement
        self.tasks = tasks
        # The running jobs, and what each was started with: a job regroups as the same trial.
        self.running: dict[int, GangTrial] = {}
        self.specs: dict[int, TrialSpec] = {}
        # Each job's newest checkpoint step (from its checkpoint events): where it would go on from.
        self.saved: dict[int, int] = {}
        # How the ends of the ranks' tasks reach the loop (from the last start()): a regrouped job's too.
        self.notify: Callable[[TaskEnded], None] | None = None
        self.on_regroup: Callable[[Regrouped], None] | None = None

    def start(self, spec: TrialSpec, workers: list[str]) -> GangTrial:
        # A worker gone by now fails here, before any rank starts.
        attempt = self._submit_ranks(spec, workers)
        trial = self.running[spec.trial_id] = GangTrial(spec.trial_id, workers)
        trial.attempt = attempt
        self.specs[spec.trial_id] = spec
        return trial

    def _submit_ranks(self, spec: TrialSpec, workers: list[str]) -> str:
        """Submit one task per rank, each pinned to its worker; the group's attempt id."""
        ranks = rendezvous(self.client, workers, spec.trial_id)
        tasks = self.tasks
        futures = [
            tasks.submit(
                tasks.task(spec, rank),
                f"trial-{spec.trial_id}-rank-{rank.rank}-{rank.attempt}",
                workers=[worker],
                allow_other_workers=False,
            )
            for worker, rank in zip(workers, ranks, strict=True)
        ]
        self.placement.busy.update(workers)
        tasks.running[spec.trial_id] = futures
        notify = self.notify
        assert notify is not None  # start() was given it
        for rank, future in enumerate(futures):
            _on_end(future, spec.trial_id, rank, notify)
        return ranks[0].attempt

    def regrouping(self) -> bool:
        """Whether a job waits for workers to go on with (it has them before any trial that would start)."""
        return any(trial.waiting is not None for trial in self.running.values())

    def finished(self, trial: GangTrial) -> None:
        """The job ended: its workers are free, its books closed."""
        self.placement.busy.difference_update(trial.workers)
        self.running.pop(trial.trial_id, None)
        self.specs.pop(trial.trial_id, None)
        self.saved.pop(trial.trial_id, None)

    # --- when a job has ended, or goes on ------------------------------------------------------------------
    def ended_or_regrouped(self, trial: GangTrial, now: float) -> Outcome | None:
        """The job's outcome once every rank has ended; None while it runs, or when, elastic, it goes on at
        another size: it lost a worker (and has a checkpoint to go on from), or ended at a checkpoint to grow."""
        outcome = trial.merged()
        if outcome is None:
            return None
        lost = trial.lost_ranks()
        if not lost and not outcome.regroup:
            return outcome
        if trial.told_to_stop:  # the run is stopping: a job that ended at a checkpoint to grow was stopped
            if outcome.regroup and outcome.state is TrialState.COMPLETED:
                outcome.state = TrialState.PRUNED
            return outcome
        saved = self.saved.get(trial.trial_id)
        if self.elastic is None or saved is None:
            return how_to_go_on(outcome, self.elastic, saved is not None)
        if trial.regrouped_from == saved:
            trial.fruitless += 1
            if trial.fruitless >= FRUITLESS_REGROUPS:
                outcome.error = (
                    f"the job regrouped {trial.fruitless} times from its checkpoint of step {saved} without "
                    f"saving a newer one; it ended there (resume=True goes on from that checkpoint).\n\n"
                    f"{outcome.error or ''}"
                ).rstrip()
                return outcome
        else:
            trial.fruitless = 0
        why = why_lost(lost) if lost else "more workers are free"
        trial.waiting = Waiting(why, sorted(lost), len(trial.workers), saved, outcome)
        # What is left of the last group is done with: its workers are free for the next.
        self.placement.busy.difference_update(trial.workers)
        self.tasks.retire(trial.trial_id)
        return self.go_on(trial, now)

    def go_on(self, trial: GangTrial, now: float) -> Outcome | None:
        """Start the job's next group on the free workers (as many as it may have), once there are at least its
        minimum; its final outcome if it waited for them longer than the elastic timeout."""
        waiting, elastic = trial.waiting, self.elastic
        assert waiting is not None and elastic is not None  # an elastic job between two groups
        if trial.told_to_stop:  # the run is stopping: the job ends as its last group did
            trial.waiting = None
            return waiting.ended
        free = self.placement.free_workers(eligible_workers(self.client, self.resources))
        size = min(elastic.max_ranks, len(free))
        if size < elastic.min_ranks:
            if now - waiting.since > elastic.timeout:
                trial.waiting = None
                return below_minimum(waiting, elastic, len(free))
            return None
        spec = self.specs[trial.trial_id]
        try:
            # The stop sent to the last group's ranks (and a regroup asked of it) must not stop the next one.
            clear_trial_on_workers(self.client, self.exp_id, trial.trial_id)
            attempt = self._submit_ranks(spec, free[:size])
        except Exception as exc:
            # A worker gone in between (rendezvous asks rank 0's): tried again at the next poll, for a while.
            if now - waiting.since > elastic.timeout:
                trial.waiting = None
                ended = waiting.ended
                ended.error = f"{waiting.why}; the job could not start again ({type(exc).__name__}: {exc})"
                return ended
            return None
        trial.regroup(free[:size], attempt)
        trial.regrouped_from = waiting.from_step
        if self.on_regroup is not None:
            self.on_regroup(
                Regrouped(
                    trial.trial_id,
                    waiting.why,
                    waiting.lost,
                    waiting.world_before,
                    size,
                    waiting.from_step,
                )
            )
        return None

    def maybe_grow(self, trial: GangTrial, now: float) -> None:
        """Ask a running elastic job to end at its next checkpoint and start again larger, when it is below its
        maximum and workers are free (none of them wanted by another trial of the run waiting to start)."""
        placement = self.placement
        if (
            self.elastic is None
            or trial.grow_asked
            or len(trial.workers) >= self.elastic.max_ranks
            or now - placement.wanted_at < 2 * WORKER_CHECK
        ):
            return
        if not placement.free_workers(eligible(placement.present_workers(), self.resources)):
            return
        # The listing may be a second old (a worker just lost still in it): asked afresh before a regroup.
        if not placement.free_workers(eligible_workers(self.client, self.resources)):
            return
        trial.grow_asked = True
        ask_to_regroup(self.client, trial.workers[0], self.exp_id, trial.trial_id)


def _on_end(task, trial_id: int, rank: int, notify: Callable[[TaskEnded], None]) -> None:
    """Tell the loop when ``task`` ends (Dask calls back from its own thread)."""
    task.add_done_callback(lambda future: notify(TaskEnded(trial_id, rank, future)))
