"""Cores and Dask resources per trial (cpus_per_trial=, resources=): the trial's torch threads, how many trials run
at once, and where; on the shared LocalCluster and on real `dask scheduler` / `dask worker` processes."""

import json
import sys
import time

import cloudpickle
import pytest
from dask_processes import dask_cluster, most_at_once

import jupyter_dist as jd
from jupyter_dist import space

# The trial functions below travel by value: the `dask worker` processes cannot import this test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def threads_used(x=0.0):
    import json
    import time

    import torch
    from distributed import get_worker
    from distributed.worker import thread_state

    started = time.time()
    time.sleep(0.4)
    task = get_worker().state.tasks[thread_state.key]
    print(
        json.dumps(
            {
                "worker": get_worker().name,
                "threads": torch.get_num_threads(),
                "asked": task.resource_restrictions or {},
                "start": started,
                "end": time.time(),
            }
        )
    )
    return x


def _runs(exp) -> list[dict]:
    return [json.loads(exp.logs(t).strip().splitlines()[-1]) for t in exp.trials["trial_id"]]


def _worker_threads(client) -> set[int]:
    import torch

    return set(client.run(torch.get_num_threads).values())


def test_cpus_per_trial_sets_the_trials_torch_threads_and_counts_two_cores_per_trial(client, run_hpo):
    before = _worker_threads(client)
    exp = run_hpo(threads_used, {"x": space.uniform(0, 1)}, trials=3, metric="x", cpus_per_trial=2)
    runs = _runs(exp)
    assert {r["threads"] for r in runs} == {2}
    # 2 single-threaded workers, 2 cores per trial: one trial at a time
    assert most_at_once([(r["start"], r["end"]) for r in runs]) == 1
    assert _worker_threads(client) == before  # the workers' own setting is back
    assert exp.record.definition.details["cpus_per_trial"] == 2


def test_parallel_given_wins_over_the_cores_count(client, run_hpo):
    exp = run_hpo(
        threads_used, {"x": space.uniform(0, 1)}, trials=4, metric="x", cpus_per_trial=2, parallel=2
    )
    assert most_at_once([(r["start"], r["end"]) for r in _runs(exp)]) == 2


def test_a_resource_no_worker_declares_is_refused_before_anything_runs(client, run_hpo, run_ddp):
    started = time.monotonic()
    with pytest.raises(jd.PlacementError, match=r"a trial needs 4e\+09 MEM; none of the cluster's 2 workers"):
        run_hpo(threads_used, {"x": space.uniform(0, 1)}, metric="x", resources={"MEM": 4e9})
    with pytest.raises(jd.PlacementError, match=r"2 workers with 1 MEM each"):
        run_ddp(threads_used, workers=2, resources={"MEM": 1})
    assert (
        time.monotonic() - started < 60
    )  # refused, where a task waiting for such a worker would wait forever


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cpus_per_trial": 0}, r"cpus_per_trial=0: give a positive whole number, or None"),
        ({"resources": {"MEM": -1}}, r"resources=\{'MEM': -1\}: give a positive amount of MEM"),
        ({"resources": ["MEM"]}, r"resources=\['MEM'\]: give a dict of Dask worker resources"),
        ({"resources": {"GPU": 1}, "gpus_per_trial": 2}, r"say the GPUs once"),
        ({"max_failures": 1, "workers_per_trial": 2}, r"max_failures= and cpus_per_trial= are for single"),
    ],
)
def test_bad_options_are_refused_naming_them(client, run_hpo, options, message):
    with pytest.raises(jd.ArgumentError, match=message):
        run_hpo(threads_used, {"x": space.uniform(0, 1)}, metric="x", **options)


@pytest.fixture(scope="module")
def declared_cluster():
    """A worker declaring 4 CPU and 8e9 MEM over 4 threads ("big"), and one declaring none ("plain")."""
    big = ["--nthreads", "4", "--name", "big", "--resources", "CPU=4,MEM=8e9"]
    with dask_cluster([big, ["--nthreads", "2", "--name", "plain"]]) as address:
        yield address


def test_on_workers_declaring_cpus_each_trial_asks_for_its_cores(declared_cluster):
    exp = jd.hpo(
        threads_used,
        {"x": space.uniform(0, 1)},
        trials=6,
        metric="x",
        sampler="random",
        cluster=declared_cluster,
        progress=False,
        cpus_per_trial=2,
    )
    runs = _runs(exp)
    assert {r["worker"] for r in runs} == {"big"}  # only where CPU is declared
    assert all(r["asked"] == {"CPU": 2} and r["threads"] == 2 for r in runs)
    assert most_at_once([(r["start"], r["end"]) for r in runs]) == 2  # 4 CPU / 2 per trial


def test_trials_needing_a_resource_run_where_it_is_declared_as_many_as_fit(declared_cluster):
    exp = jd.hpo(
        threads_used,
        {"x": space.uniform(0, 1)},
        trials=4,
        metric="x",
        sampler="random",
        cluster=declared_cluster,
        progress=False,
        resources={"MEM": 4e9},
    )
    runs = _runs(exp)
    assert {r["worker"] for r in runs} == {"big"}
    assert all(r["asked"] == {"MEM": 4e9} for r in runs)
    assert most_at_once([(r["start"], r["end"]) for r in runs]) == 2  # 8e9 / 4e9
    assert exp.record.definition.details["resources"] == {"MEM": 4e9}


def test_a_gpu_among_the_resources_is_gpus_per_trial():
    from jupyter_dist.kinds import RunOptions

    options = RunOptions(worker_resources={"GPU": 1.0, "MEM": 2e9})
    assert options.gpus == 1 and options.resources == {"MEM": 2e9, "GPU": 1}
    assert options.runtime_details()["resources"] == {"MEM": 2e9}
