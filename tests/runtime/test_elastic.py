"""Elastic data-parallel jobs (trials/_elastic.py) on real clusters: a job that loses a rank's worker (SIGKILLed)
goes on from its newest checkpoint on the ranks left, and one that finds a new worker grows at its next checkpoint;
either way its final weights are those of a job that changed size at that checkpoint by hand (stopped there and
resumed at the new size)."""

import subprocess
import sys
import time

import cloudpickle
import pytest
import torch
from dask_processes import DASK, QUIET, dask_cluster
from process_tools import stop

import jupyter_dist as jd
from jupyter_dist.store import experiment_detail

# The training functions travel by value: `dask worker` processes cannot import this test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.timeout(240)

EVERY = 4  # steps between checkpoints


def regression(epochs=3, kill_at=None, kill_world=3, kill_once=None, preempt_after=None, step_time=0.05):
    """Deterministic training on a fixed dataset: the same ranks, data order and checkpoint give the same weights.
    ``kill_at``: the last rank of a ``kill_world``-rank group SIGKILLs its own worker at that step (``kill_once``: a
    file that says it has, for workers that come back). ``preempt_after``: every rank
    raises once it has checkpointed that step (the job stopped there by hand, to be resumed at another size)."""
    import os
    import signal
    import time

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import jupyter_dist as jd

    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(96, 4, generator=data), torch.randn(96, 1, generator=data)
    model = jd.prepare(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = jd.prepare(DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True))
    state = {"model": model, "optimiser": optimiser}
    step, epoch = 0, 0
    if (restored := jd.restore(state)) is not None:
        step, epoch = restored.step + 1, restored.state["epoch"]
    while epoch < epochs:
        for xb, yb in loader:
            optimiser.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimiser.step()
            jd.report(step=step, loss=torch.nn.functional.mse_loss(model(x), y).item(), world=jd.world_size())
            if step == kill_at and jd.world_size() == kill_world and jd.rank() == kill_world - 1:
                if kill_once is None or not os.path.exists(kill_once):
                    if kill_once is not None:
                        open(kill_once, "w").close()
                    os.kill(
                        os.getpid(), signal.SIGKILL
                    )  # the worker process dies at once, as under the OOM killer
            if step % EVERY == 0:
                jd.checkpoint(step, {**state, "epoch": epoch})
                if step == preempt_after:
                    raise RuntimeError("preempted")
            step += 1
            time.sleep(step_time)
        epoch += 1
        # the next epoch starts from its first batch: saved as such, a checkpoint here resumes there
    full = jd.unwrap(model).state_dict()
    weights = {
        k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone() for k, v in full.items()
    }
    return {
        "weights": weights,
        "world": jd.world_size(),
        "steps": step,
        "loss": torch.nn.functional.mse_loss(model(x), y).item(),
    }


def changed_size_by_hand(cluster, tmp_path, before, after, at, **options):
    """The reference: ``before`` ranks up to the checkpoint of step ``at``, stopped there, resumed on ``after``."""
    run = dict(
        cluster=cluster, progress=False, store=str(tmp_path / "ref.db"), checkpoint_dir=tmp_path / "ref"
    )
    with pytest.raises(jd.ExperimentFailed, match="preempted"):
        jd.data_parallel(regression, workers=before, name="ref", preempt_after=at, **run, **options)
    return jd.data_parallel(regression, workers=after, name="ref", resume=True, **run, **options)


def same_weights(a, b):
    return all(torch.allclose(a[k], b[k], atol=1e-6) for k in b)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_job_whose_worker_is_killed_goes_on_with_the_ranks_left(tmp_path, strategy):
    with dask_cluster([["--no-nanny", "--nthreads", "1"]] * 3) as address:
        # Killed at step 10, rank 2's worker never comes back (no nanny): the job's newest checkpoint is step 8.
        reference = changed_size_by_hand(address, tmp_path, 3, 2, at=8, strategy=strategy)
        started = time.monotonic()
        exp = jd.data_parallel(
            regression,
            workers=3,
            min_workers=2,
            cluster=address,
            progress=False,
            store=str(tmp_path / "elastic.db"),
            checkpoint_dir=tmp_path / "elastic",
            strategy=strategy,
            kill_at=10,
        )
        took = time.monotonic() - started
    assert exp.state == "completed", exp.error
    assert exp.result["world"] == 2 and len(exp.rank_results) == 2
    assert same_weights(exp.result["weights"], reference.result["weights"])
    (restart,) = exp.restarts.to_dict("records")
    assert (restart["world_before"], restart["world_after"], restart["from_step"]) == (3, 2, 8)
    assert (
        restart["lost"] == [2]
        and restart["lost_at"] >= 9
        and restart["steps_redone"] == restart["lost_at"] - 8
    )
    assert (
        "rank 2 (worker tcp://" in restart["message"]
        and "continuing on 2 ranks from step 8" in restart["message"]
    )
    # the curve goes on from the checkpoint: every step once, the world size changing after step 8
    history = exp.history[exp.history.metric == "world"].drop_duplicates("step", keep="last")
    assert list(history.step) == list(range(exp.result["steps"]))
    assert set(history[history.step <= 8].value) == {3.0} and set(history[history.step > 8].value) == {2.0}
    assert took < 120
    # the stored run says the same (the lab panel and REST read it from there)
    stored = jd.load(exp.name, store=str(tmp_path / "elastic.db"))
    assert stored.restarts.to_dict("records") == exp.restarts.to_dict("records")
    (trial,) = experiment_detail(stored.record)["trials"]  # what the REST API serves
    assert [r["message"] for r in trial["restarts"]] == [restart["message"]]
    assert "regrouped once" in stored.status_line() and "continuing on 2 ranks" in stored.status_line()


def start_a_worker_at(step, address, started):
    """progress=: a view that starts one more `dask worker` once the job has reported ``step``."""

    def view(exp):
        class View:
            def start(self):
                pass

            def finish(self):
                pass

            def idle(self):
                records = exp.trial_records()
                if not started and records and records[0].steps > step:
                    started.append(
                        subprocess.Popen(
                            [DASK, "worker", address, "--no-nanny", "--nthreads", "1", "--no-dashboard"],
                            **QUIET,
                        )
                    )

        return View()

    return view


def test_a_job_grows_onto_a_worker_that_joins_at_its_next_checkpoint(tmp_path):
    started = []
    with dask_cluster([["--no-nanny", "--nthreads", "1"]] * 2) as address:
        try:
            exp = jd.data_parallel(
                regression,
                workers=2,
                max_workers=3,
                cluster=address,
                progress=start_a_worker_at(5, address, started),
                store=str(tmp_path / "elastic.db"),
                checkpoint_dir=tmp_path / "elastic",
                epochs=6,  # long enough for a worker process to start and join (seconds)
            )
            assert exp.state == "completed", exp.error
            (restart,) = exp.restarts.to_dict("records")
            assert (restart["world_before"], restart["world_after"], restart["lost"]) == (2, 3, [])
            # it ended at a checkpoint to grow: nothing redone
            assert (
                restart["steps_redone"] == 0
                and restart["from_step"] % EVERY == 0
                and restart["from_step"] > 5
            )
            assert "continuing on 3 ranks" in restart["message"]
            assert exp.result["world"] == 3 and len(exp.rank_results) == 3
            reference = changed_size_by_hand(address, tmp_path, 2, 3, at=restart["from_step"], epochs=6)
            assert same_weights(exp.result["weights"], reference.result["weights"])
        finally:
            for process in started:
                stop(process)


def test_a_job_below_its_minimum_for_longer_than_the_timeout_ends_naming_its_checkpoint(tmp_path):
    with dask_cluster([["--no-nanny", "--nthreads", "1"]] * 3) as address:
        started = time.monotonic()
        with pytest.raises(jd.ExperimentFailed) as failed:
            jd.data_parallel(
                regression,
                workers=3,
                min_workers=3,
                elastic_timeout=3,
                cluster=address,
                progress=False,
                store=False,
                checkpoint_dir=tmp_path,
                kill_at=10,
            )
        took = time.monotonic() - started
    error = failed.value.experiment.error
    assert (
        "rank 2 (worker tcp://" in error and "fewer than min_workers=3 free workers for 3 s (2 free)" in error
    )
    assert "Its newest checkpoint is step 8: run it again with resume=True" in error
    assert took < 60


def lockstep(steps=400, die_on_rank=1):
    import os
    import time

    import torch

    import jupyter_dist as jd

    model = jd.prepare(torch.nn.Linear(2, 1))
    for step in range(steps):
        model(torch.ones(1, 2)).sum().backward()
        jd.report(step=step, x=float(step))
        if step == 5 and jd.rank() == die_on_rank and jd.world_size() == 2:
            os._exit(1)
        time.sleep(0.01)


def test_an_elastic_job_that_never_checkpoints_fails_saying_how_to_go_on(client):
    with pytest.raises(jd.ExperimentFailed) as failed:
        jd.data_parallel(lockstep, workers=2, min_workers=1, cluster=client, progress=False, store=False)
    error = failed.value.experiment.error
    assert "left the cluster" in error and "jupyter_dist.checkpoint(step, state) every few steps" in error
    assert "min_workers=N" not in error  # it is elastic: what it lacks is a checkpoint
    client.wait_for_workers(2, timeout=60)


def test_a_job_that_is_not_elastic_fails_saying_how_it_could_go_on(client, tmp_path):
    with pytest.raises(jd.ExperimentFailed) as failed:
        jd.data_parallel(lockstep, workers=2, cluster=client, progress=False, store=False)
    assert "data_parallel(..., min_workers=N)" in failed.value.experiment.error
    client.wait_for_workers(2, timeout=60)


def test_hpo_trials_of_several_ranks_are_elastic_too(client, tmp_path):
    exp = jd.hpo(
        regression,
        # constants: each trial's arguments (the worker comes back through its nanny: it is killed once)
        {"epochs": 2, "kill_at": 6, "kill_world": 2, "kill_once": str(tmp_path / "killed")},
        trials=1,
        metric="loss",
        mode="min",
        workers_per_trial=2,
        min_workers_per_trial=1,
        cluster=client,
        progress=False,
        store=False,
        checkpoint_dir=tmp_path,
    )
    assert exp.trials.state[0] == "completed", exp.error
    restart = exp.restarts.to_dict("records")[0]  # then it may grow back onto the worker that came back
    assert (restart["world_before"], restart["from_step"], restart["lost"]) == (2, 4, [1])
    client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"workers": 2, "min_workers": 3}, "min_workers=3, workers=2, max_workers=2: an elastic job needs"),
        ({"workers": 4, "max_workers": 3}, "min_workers=4, workers=4, max_workers=3"),
        ({"workers": 2, "min_workers": 0}, "min_workers=0: give a whole number of workers >= 1"),
        ({"workers": 2, "elastic_timeout": 5}, "elastic_timeout=5 is for elastic jobs"),
        ({"workers": 2, "min_workers": 1, "elastic_timeout": 0}, "elastic_timeout=0: give the seconds"),
    ],
)
def test_bad_elastic_bounds_are_refused_before_anything_runs(arguments, message):
    with pytest.raises(jd.ArgumentError, match=message):
        jd.data_parallel(regression, cluster="tcp://127.0.0.1:9", progress=False, store=False, **arguments)


def test_a_stop_sent_to_one_group_of_ranks_does_not_stop_the_next():
    # A stop for the group that lost a rank is sent without waiting: it may reach a worker after the next group of
    # the same trial began there. It names its group's attempt, so the next group does not see it.
    from jupyter_dist.trials._trial_context import TrialContext, forget_experiment, mark_stopped

    def group(attempt):
        return TrialContext("exp-elastic-stop", 0, attempt, "topic", lambda *_: None)

    try:
        mark_stopped("exp-elastic-stop", [0], "0-old")
        assert group("0-old").should_stop and not group("0-new").should_stop
        mark_stopped("exp-elastic-stop", [0])  # the trial itself (pruned, stopped by a rule): every attempt
        assert group("0-new").should_stop
    finally:
        forget_experiment("exp-elastic-stop")
