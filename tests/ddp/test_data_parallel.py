"""Data-parallel training on the session's real LocalCluster (2 worker processes), gloo on CPU, real torch."""

import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import jupyter_dist as jd


def regression(per_rank_batch=8, epochs=3, fail_rank=None, num_workers=0):
    torch.manual_seed(0)  # the same initial weights on every rank and in the single-process run
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(96, 5, generator=data), torch.randn(96, 1, generator=data)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(
        TensorDataset(x, y), batch_size=per_rank_batch, shuffle=False, num_workers=num_workers
    )
    model, optimiser, loader = jd.prepare(model, optimiser, loader)
    for epoch in range(epochs):
        for xb, yb in loader:
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimiser.step()
        if jd.rank() == fail_rank and epoch == 1:
            raise ValueError(f"rank {jd.rank()} diverged")
        # every rank reports; only rank 0's reports are kept
        jd.report(step=epoch, loss=loss.item(), rank=jd.rank(), world=jd.world_size(), batches=len(loader))
    print(f"rank {jd.rank()} done")
    return {name: value.detach().clone() for name, value in jd.unwrap(model).state_dict().items()}


def test_two_ranks_end_with_the_weights_of_one_process_on_the_global_batch(run_ddp):
    exp = run_ddp(regression, workers=2, per_rank_batch=8)
    assert exp.state == "completed" and exp.kind == "ddp"
    alone = regression(per_rank_batch=16)  # outside a run prepare() changes nothing: one process, batch 2b
    ranks = exp.rank_results
    assert len(ranks) == 2 and exp.result is not None
    for name, weights in alone.items():
        assert torch.allclose(exp.result[name], weights, atol=1e-6), name
        assert torch.equal(ranks[0][name], ranks[1][name]), name  # every rank holds the same model
        assert not torch.allclose(weights, regression(per_rank_batch=8)[name], atol=1e-4)  # the test can fail

    history = exp.history.pivot_table(index="step", columns="metric", values="value")
    assert list(history.index) == [0, 1, 2]  # rank 0's reports only: one per epoch, not two
    assert (history["rank"] == 0).all() and (history["world"] == 2).all()
    assert (history["batches"] == 96 / 8 / 2).all()  # each rank iterates its half of the data
    logs = exp.logs(0)
    assert "[rank 0] rank 0 done" in logs and "[rank 1] rank 1 done" in logs


def test_a_failing_rank_stops_the_others_promptly_and_the_workers_stay_usable(run_ddp):
    started = time.monotonic()
    with pytest.raises(jd.ExperimentFailed, match="rank 1 of 2 failed") as failed:
        run_ddp(regression, workers=2, fail_rank=1, epochs=50)
    assert time.monotonic() - started < 15  # rank 0 was waiting in an all-reduce: seconds, not gloo's 30 min
    error = failed.value.experiment.trials.error[0]
    assert "ValueError: rank 1 diverged" in error
    # the same cell again: fresh ports, the same workers
    again = run_ddp(regression, workers=2, epochs=1)
    assert again.state == "completed" and len(again.rank_results) == 2


def test_too_few_workers_is_a_clear_error_before_any_work(run_ddp):
    with pytest.raises(
        jd.PlacementError, match="needs 3 workers, one rank per worker process; the cluster has 2"
    ):
        run_ddp(
            regression,
            workers=3,
        )
    with pytest.raises(
        jd.PlacementError, match="needs 2 workers with 1 GPU each.*the cluster has 0 \\(of 2 workers\\)"
    ):
        run_ddp(
            regression,
            workers=2,
            gpus_per_worker=1,
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"workers": 0}, "workers=0"),
        ({"backend": "mpi"}, "backend='mpi'"),
        ({"backend": "nccl"}, "backend='nccl' runs on GPUs"),
        ({"gpus_per_worker": -1}, "gpus_per_worker=-1"),
        ({"epochz": 3}, "regression\\(\\) has no argument 'epochz'"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(kwargs, message):
    with pytest.raises(ValueError, match=message):
        jd.data_parallel(regression, cluster="tcp://127.0.0.1:9", progress=False, **kwargs)


def test_the_rendezvous_times_out_when_a_worker_is_busy(client, run_ddp):
    busy = sorted(client.scheduler_info()["workers"])[1]
    blocker = client.submit(time.sleep, 4, workers=[busy], pure=False)
    started = time.monotonic()
    with pytest.raises(jd.ExperimentFailed, match="not every rank joined within 1s") as failed:
        run_ddp(regression, workers=2, rendezvous_timeout=1)
    assert "the job needs 2 workers free at the same time" in failed.value.experiment.trials.error[0]
    assert time.monotonic() - started < 20
    blocker.result()


def test_dataloader_worker_processes_work_inside_the_ranks(run_ddp):
    exp = run_ddp(regression, workers=2, epochs=1, num_workers=2)
    assert exp.state == "completed"


def test_a_timeout_stops_every_rank_gracefully(run_ddp):
    def endless(steps=10_000):
        model = jd.prepare(torch.nn.Linear(2, 1))
        for step in range(steps):
            model(torch.ones(1, 2)).sum().backward()  # DDP all-reduces the gradients: the ranks stay in step
            time.sleep(0.01)
            jd.report(step=step, x=float(step))

    exp = run_ddp(endless, workers=2, timeout=3)
    assert exp.state == "completed" and exp.trials.state[0] in ("stopped", "pruned")
    assert exp.trials.steps[0] > 0  # it ran, and was stopped rather than failed


def test_outside_a_run_prepare_changes_nothing_and_there_is_one_rank():
    model, optimiser = torch.nn.Linear(2, 2), None
    loader = DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2)
    assert jd.prepare(model) is model
    assert jd.prepare(model, optimiser, loader) == (model, optimiser, loader)
    assert (jd.rank(), jd.world_size(), jd.is_main()) == (0, 1, True)
    assert jd.unwrap(model) is model


def sees_one_rank(width=2):
    model = torch.nn.Linear(2, width)
    return {"same": float(jd.prepare(model) is model), "world": jd.world_size(), "rank": jd.rank()}


def test_in_an_hpo_trial_prepare_changes_nothing(run_hpo):
    exp = run_hpo(
        sees_one_rank,
        {"width": jd.space.choice([2, 3])},
        trials=2,
        metric="same",
    )
    assert (exp.trials.value == 1).all()


def dp_objective(lr=0.1):
    model = jd.prepare(torch.nn.Linear(3, 1))
    model(torch.ones(2, 3)).sum().backward()  # an all-reduce across the trial's ranks
    jd.report(step=0, world=jd.world_size(), rank=jd.rank())
    return {"score": -abs(lr - 0.3), "world": jd.world_size()}


def test_hpo_trials_can_each_be_a_data_parallel_job(run_hpo):
    exp = run_hpo(
        dp_objective,
        {"lr": jd.space.choice([0.1, 0.3, 0.5])},
        trials=3,
        metric="score",
        sampler="grid",
        workers_per_trial=2,
    )
    assert exp.trials.state.eq("completed").all() and len(exp.trials) == 3
    assert exp.best.params == {"lr": 0.3}
    history = exp.history.pivot_table(index="trial_id", columns="metric", values="value")
    assert (history.world == 2).all() and (history["rank"] == 0).all()
    with pytest.raises(jd.PlacementError, match="needs 4 workers"):
        run_hpo(
            dp_objective,
            {"lr": 0.1},
            trials=1,
            metric="score",
            workers_per_trial=4,
        )


def test_cuda_in_the_kernel_is_refused_only_when_the_embedded_cluster_would_fork(monkeypatch):
    import dask
    import distributed  # noqa: F401 - before the config.set below: its defaults must outlive the block

    from jupyter_dist import space

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)  # this machine has no GPU to initialise
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        for run in (
            lambda cluster: jd.data_parallel(regression, cluster=cluster, progress=False),
            lambda cluster: jd.hpo(
                regression, {"epochs": space.integer(1, 2)}, cluster=cluster, metric="loss"
            ),
        ):
            started = time.monotonic()
            with pytest.raises(jd.ClusterError, match="forked workers cannot use CUDA"):
                run("local")
            assert time.monotonic() - started < 5  # refused before the cluster starts
            # Another cluster's workers are not this kernel's children: its CUDA state cannot reach them (the
            # run gets as far as connecting to the address, where nothing listens).
            with pytest.raises(jd.ClusterError) as elsewhere:
                run("tcp://127.0.0.1:9")
            assert "forked workers" not in str(elsewhere.value)
    # Spawned workers (Dask's default) do not inherit the kernel's CUDA state: the check lets the run through.
    from jupyter_dist.cluster import check_kernel_cuda

    check_kernel_cuda("local")


@pytest.mark.gpu
def test_nccl_on_gpus_matches_one_process():
    """On a machine with GPUs: ranks on workers that have the GPU resource, NCCL, batches moved to the GPU."""
    from distributed import Client, LocalCluster

    gpus = torch.cuda.device_count()
    workers = min(gpus, 2)
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, resources={"GPU": 1}, host="127.0.0.1"
        ) as cluster,
        Client(cluster) as gpu_client,
    ):
        exp = jd.data_parallel(
            regression,
            workers=workers,
            gpus_per_worker=1,
            cluster=gpu_client,
            progress=False,
            per_rank_batch=8,
        )
    alone = regression(per_rank_batch=8 * workers)
    for name, weights in alone.items():
        assert exp.result[name].device.type == "cuda"
        assert torch.allclose(exp.result[name].cpu(), weights, atol=1e-5), name


def test_nccl_ranks_sharing_a_gpu_are_named_with_the_way_out():
    # Each rank's device UUID, by rank (what _refuse_shared_gpus collects through the rendezvous store).
    from jupyter_dist.ddp._trial import shared_gpus_message

    assert shared_gpus_message(["GPU-a", "GPU-b"]) is None
    message = shared_gpus_message(["GPU-a", "GPU-b", "GPU-a", "GPU-b", "GPU-c"])
    assert "ranks 0, 2 share one GPU; ranks 1, 3 share one GPU" in message
    assert "backend='gloo'" in message


def test_a_run_waits_for_the_workers_its_cluster_is_still_starting():
    """A cluster object whose spec keeps enough workers, not all connected yet (just scaled up, or restarting
    after a run restarted its stuck ranks' workers): the run waits for them instead of refusing with "the cluster
    has 0"."""
    from distributed import Client, LocalCluster

    from jupyter_dist.cluster import forget_cluster

    with (
        LocalCluster(n_workers=0, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0") as cluster,
        Client(cluster) as starting,
    ):
        cluster.scale(2)  # returns at once; the worker processes take seconds to start and connect
        assert len(starting.scheduler_info()["workers"]) < 2
        try:
            exp = jd.data_parallel(regression, workers=2, cluster=starting, progress=False, epochs=1)
        finally:
            forget_cluster(starting)
    assert exp.state == "completed", exp.error
