"""The Dask launcher's single-task trials: submitted together where placed alike, run again after a failure
(``max_failures``), and submitted again when the worker they were hinted to died before they could start.

Each is a TaskTrial (trials/_task_trial.py), which decides from its outcome event or its task when it has ended;
this keeps what the launcher (trials/_launcher.py) needs to submit one again: its spec and its retries.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol import Outcome
from ._placement import Placement
from ._seams import RunningTrial, TrialSpec
from ._task_trial import Retries, TaskTrial
from ._trial_tasks import TrialTasks


class SingleTrials:
    """The running single-task trials of one run: placed by ``placement``, submitted through ``tasks``; a trial
    whose function raised runs again up to ``max_failures`` more times (``on_retry(outcome, why)`` hears of it)."""

    def __init__(self, client, placement: Placement, tasks: TrialTasks, max_failures: int) -> None:
        self.client = client
        self.placement = placement
        self.tasks = tasks
        self.retries = Retries(max_failures)
        self.on_retry: Callable[[Outcome, str], None] | None = None
        # Trial id -> spec, to run one again (max_failures) or elsewhere.
        self.specs: dict[int, TrialSpec] = {}

    def start(self, starts: list[tuple[TrialSpec, list[str]]]) -> list[RunningTrial]:
        """Submit the trials, those placed alike in one submission (``client.map``: one message to the scheduler
        and one graph update there for all, instead of one each)."""
        alike: dict[tuple[str, ...], list[TrialSpec]] = {}
        pinned, tasks = self.placement.pinned, self.tasks
        for spec, placement in starts:
            alike.setdefault(tuple(placement), []).append(spec)
            self.specs[spec.trial_id] = spec
            if placement:
                pinned[spec.trial_id] = placement[0]
        trials: list[RunningTrial] = []
        # The pin is a hint (another worker may take the trial) unless the trials need resources: Dask's work
        # stealing moves a loosely pinned task to an idle worker without checking its resources, and a worker
        # handed a GPU trial it does not declare dies ("KeyError: 'GPU'" in its state machine). Strictly pinned,
        # a trial whose worker dies goes to "no-worker" and unpin_orphans() submits it again, unpinned.
        loose = not tasks.resources
        for where, specs in alike.items():
            hint = {"workers": list(where), "allow_other_workers": loose} if where else {}
            futures = tasks.submit_all(
                [tasks.task(spec, None) for spec in specs],
                [f"trial-{spec.trial_id}" for spec in specs],
                **hint,
            )
            for spec, future in zip(specs, futures, strict=True):
                # Its end is seen by the launcher's poll(), not by a done-callback (that is for data-parallel ranks).
                tasks.running[spec.trial_id] = [future]
                trials.append(TaskTrial(spec.trial_id))
        return trials

    def ran_again(self, trial: TaskTrial, outcome: Outcome) -> bool:
        """Whether ``outcome`` is one of a failed attempt that runs again (now, or already): as a worker lost
        mid-trial is (Dask runs its task again), as the next attempt of the same trial, its checkpoints there."""
        retries = self.retries
        if retries.already(outcome):
            return True
        if not retries.take(trial, outcome):
            return False
        if self.on_retry is not None:
            self.on_retry(outcome, retries.why(trial.trial_id))
        spec, tasks = self.specs[trial.trial_id], self.tasks
        self.placement.pinned.pop(trial.trial_id, None)
        tasks.lingering.extend(tasks.running.get(trial.trial_id, []))  # released once it has ended
        retry = retries.failures[trial.trial_id]
        task = tasks.submit(tasks.task(spec, None), f"trial-{trial.trial_id}-retry-{retry}")
        tasks.running[trial.trial_id] = [task]
        trial.again()
        return True

    def finished(self, trial_id: int) -> None:
        """The trial ended (whatever its kind: its retries are forgotten either way)."""
        self.placement.pinned.pop(trial_id, None)
        self.specs.pop(trial_id, None)
        self.retries.forget(trial_id)

    def unpin_orphans(self) -> None:
        """Re-submit, unpinned, the hinted trials whose worker is gone and that Dask left with nowhere to run.

        A task pinned with ``allow_other_workers=True`` to a worker that then dies (a trial killing its worker,
        say) is rescheduled; if no worker is running at that moment it goes to "no-worker", and Dask re-checks
        such tasks on a worker's arrival against the dead worker alone (distributed 2026.8:
        ``bulk_schedule_unrunnable_after_adding_worker`` ignores loose restrictions): it would wait forever. A
        trial that needs resources is pinned strictly (see start()) and goes to "no-worker" whenever its worker
        dies: the same way out.
        """
        pinned = self.placement.pinned
        if not pinned or self.client.status != "running":
            return
        present = self.placement.present_workers()
        tasks = self.tasks
        running = tasks.running
        orphans = {
            running[trial_id][0].key: trial_id
            for trial_id, worker in pinned.items()
            if worker not in present and not running[trial_id][0].done()
        }
        if not orphans:
            return
        states = self.client.run_on_scheduler(_task_states, list(orphans))
        for key, trial_id in orphans.items():
            del pinned[trial_id]
            if states.get(key) != "no-worker":
                continue  # running or queued elsewhere: Dask took it from there
            stranded = running[trial_id][0]
            task = tasks.submit(tasks.task(self.specs[trial_id], None), f"trial-{trial_id}-unpinned")
            running[trial_id] = [task]
            stranded.cancel()  # its end is ignored (the launcher's poll() looks at the trial's task only)


def _task_states(keys: list[str], dask_scheduler=None) -> dict[str, str | None]:
    """On the scheduler: the state of each task (None when it is unknown)."""
    tasks = dask_scheduler.tasks
    return {key: tasks[key].state if key in tasks else None for key in keys}
