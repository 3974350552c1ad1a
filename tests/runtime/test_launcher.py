"""Where the Dask launcher sends trials queued ahead, and which one begins when a trial ends (no Dask needed:
placement is the launcher's own bookkeeping of the workers its trials' outcomes came from)."""

from __future__ import annotations

from jupyter_dist.protocol import Outcome, TrialState
from jupyter_dist.trials._launcher import DaskLauncher
from jupyter_dist.trials._task_trial import TaskTrial


class Workers:
    """What the launcher asks the cluster about its workers (their threads), and nothing else."""

    status = "running"

    def __init__(self, **nthreads: int) -> None:
        self.nthreads = nthreads

    def scheduler_info(self, n_workers=-1):
        return {"workers": {w: {"nthreads": n} for w, n in self.nthreads.items()}}


def end(launcher: DaskLauncher, trial_id: int, worker: str) -> int | None:
    """A single-task trial ended on ``worker`` (its task already released)."""
    outcome = Outcome(trial_id, "a", TrialState.COMPLETED, returned=1.0, worker=worker)
    return launcher.finished(TaskTrial(trial_id), outcome)


def test_queued_trials_spread_over_the_workers_and_begin_as_the_trial_ahead_ends():
    launcher = DaskLauncher(Workers(w1=1, w2=1), abs, "exp-test")
    assert launcher.place(0, behind=1) is None  # no worker has run a trial of ours yet: nowhere to queue
    assert end(launcher, 0, "w1") is None and end(launcher, 1, "w2") is None
    # one queued behind each worker, the latest to end first; then none, until one ends
    assert launcher.place(5, behind=1) == ["w2"]
    assert launcher.place(6, behind=1) == ["w1"]
    assert launcher.place(7, behind=1) is None
    assert launcher.place(7, behind=3) == ["w2"]  # deeper queues (very short trials) take more
    assert end(launcher, 2, "w1") == 6  # the trial queued on w1 runs now
    assert launcher.place(8, behind=1) == ["w1"]
    assert end(launcher, 3, "w2") == 5 and end(launcher, 5, "w2") == 7
    assert launcher.place(9) == ["w2"]  # not queued: the worker that freed last, as before


def test_a_worker_of_several_threads_takes_as_many_queued_trials_per_thread():
    launcher = DaskLauncher(Workers(w1=1, w2=4), abs, "exp-test")
    end(launcher, 0, "w1")
    end(launcher, 1, "w2")
    assert [launcher.place(t, behind=1) for t in range(10, 16)] == [["w2"]] * 4 + [["w1"], None]
    assert end(launcher, 2, "w2") == 10  # the first queued there begins as one of its four slots frees


def test_a_queued_trial_that_ends_first_is_forgotten_and_data_parallel_trials_never_queue():
    launcher = DaskLauncher(Workers(w1=1), abs, "exp-test")
    end(launcher, 0, "w1")
    assert launcher.place(4, behind=1) == ["w1"]
    assert end(launcher, 4, "w1") is None  # it ran elsewhere after all (its worker was lost, say)
    assert launcher.place(5, behind=1) == ["w1"]
    gang = DaskLauncher(None, abs, "exp-test", ranks=2)
    assert gang.place(0, behind=1) is None


def test_trials_are_queued_ahead_only_where_every_slot_is_the_runs():
    launcher = DaskLauncher(Workers(w1=16, w2=16), abs, "exp-test")
    assert launcher.queues_behind(32) and not launcher.queues_behind(
        8
    )  # 8 of 32 threads: a queued trial would run
    assert not DaskLauncher(Workers(w1=1), abs, "exp-test", ranks=2).queues_behind(8)
