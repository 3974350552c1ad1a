"""Elastic data-parallel jobs (runtime/_elastic.py) on real clusters: a job that loses a rank's worker (SIGKILLed)
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

# The training functions travel by value: `dask worker` processes cannot import this test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.timeout(240)

EVERY = 4  # steps between checkpoints


def regression(epochs=3, kill_at=None, preempt_after=None, step_time=0.05, strategy_check=None):
    """Deterministic training on a fixed dataset: the same ranks, data order and checkpoint give the same weights.
    ``kill_at``: rank 2 of a 3-rank group SIGKILLs its own worker at that step. ``preempt_after``: every rank
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
            if step == kill_at and jd.world_size() == 3 and jd.rank() == 2:
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
    return {"weights": weights, "world": jd.world_size(), "steps": step}


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
