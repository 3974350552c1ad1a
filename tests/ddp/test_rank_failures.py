"""How a data-parallel run ends when a rank cannot: its worker dies, it never reports, the cluster shrinks.

Real LocalClusters, real gloo process groups; workers are killed for real and come back through their nanny.
"""

import os
import threading
import time

import pytest
import torch

import jupyter_dist as jd
from jupyter_dist.trials import _placement


def lockstep(steps=10_000, die_on_rank=None, only_rank_0_reports=False, step_time=0.01):
    """Ranks kept in step by DDP's all-reduce of the gradients."""
    model = jd.prepare(torch.nn.Linear(2, 1))
    for step in range(steps):
        model(torch.ones(1, 2)).sum().backward()
        time.sleep(step_time)
        if step == 5 and jd.rank() == die_on_rank:
            os._exit(1)  # the worker process dies mid-run (as with the OOM killer); its nanny restarts it
        if jd.is_main() or not only_rank_0_reports:
            jd.report(step=step, x=float(step))
    return "done"


def test_a_rank_whose_worker_dies_is_named_as_the_cause(client):
    started = time.monotonic()
    with pytest.raises(jd.ExperimentFailed) as failed:
        jd.data_parallel(lockstep, workers=2, cluster=client, progress=False, die_on_rank=1)
    assert time.monotonic() - started < 30  # not Dask waiting forever for the pinned task's worker
    error = failed.value.experiment.trials.error[0]
    # rank 0 failed too ("Connection closed by peer"), but as a consequence: the lost worker is the cause
    assert error.startswith("rank 1 of 2 failed:") and "left the cluster" in error, error
    client.wait_for_workers(2, timeout=60)


def test_a_single_rank_whose_worker_dies_ends_the_run(client):
    with pytest.raises(jd.ExperimentFailed, match="rank 0's worker .* left the cluster"):
        jd.data_parallel(lockstep, workers=1, cluster=client, progress=False, die_on_rank=0)
    client.wait_for_workers(2, timeout=60)


def test_ranks_that_never_report_are_stopped_with_rank_0_and_the_workers_stay_usable(client):
    # A common pattern: only the main rank reports. At a stop rank 0 leaves at its report(); rank 1 goes on into
    # the next all-reduce, which rank 0 will never join, and is given up on (its worker restarted).
    exp = jd.data_parallel(
        lockstep, workers=2, cluster=client, progress=False, timeout=2, only_rank_0_reports=True
    )
    assert exp.state == "completed" and exp.trials.state[0] in ("stopped", "pruned")
    # given up on RANK_GRACE after rank 0 left, not abandoned at the end of the stop's grace period
    assert "grace period" not in str(exp.trials.error[0])
    client.wait_for_workers(2, timeout=60)
    again = jd.data_parallel(
        lockstep, workers=2, cluster=client, progress=False, steps=3, rendezvous_timeout=20
    )
    assert again.state == "completed" and again.rank_results == ["done", "done"]


def test_a_cluster_that_shrinks_under_a_study_fails_with_a_placement_error(monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setattr(_placement, "WORKER_WAIT", 2.0)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        # Once the first 2-rank trial runs, the cluster scales down to one worker: that trial loses a rank,
        # and the next one can never be placed.
        shrink = threading.Timer(3.0, cluster.scale, args=(1,))
        shrink.start()
        started = time.monotonic()
        try:
            with pytest.raises(
                jd.PlacementError, match="needs 2 workers, one rank per worker process; the cluster has 1"
            ):
                jd.hpo(
                    lockstep,
                    {"steps": 400, "step_time": 0.02},
                    trials=2,
                    metric="x",
                    workers_per_trial=2,
                    cluster=client,
                    progress=False,
                )
        finally:
            shrink.cancel()  # had the run ended early, it must not fire on a closed cluster
        assert time.monotonic() - started < 40
