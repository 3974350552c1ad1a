"""The embedded cluster keeps a worker that is being restarted, and restarts it as it started it
(cluster/_local_cluster.py)."""

import multiprocessing
import time

import dask


def test_a_worker_whose_restart_outlasts_the_lost_worker_check_stays_in_the_cluster(client):
    # distributed's SpecCluster gives a worker up (closes its nanny for good) when it is still missing this long
    # after it left; a restart takes about 2 s here (the process ends, a new one is spawned), so with the check
    # at 0.2 s every restart meets it mid-way, as a second restart within 15 s of a first one does by default
    # (two data-parallel runs in a row whose stuck ranks were restarted). Stock LocalCluster loses the worker.
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.2s"}):
        names = sorted(info["name"] for info in client.scheduler_info()["workers"].values())
        restarted = next(iter(client.scheduler_info()["workers"]))
        client.restart_workers([restarted], timeout=60)
        time.sleep(2)  # past the check
    client.wait_for_workers(2, timeout=60)
    assert sorted(info["name"] for info in client.scheduler_info()["workers"].values()) == names
    assert sorted(client.cluster.workers) == names  # both nannies still there
    # The restarted worker, too, may start processes (DataLoader(num_workers>0)): it is not daemonic.
    assert not any(client.run(lambda: multiprocessing.current_process().daemon).values())


def _thread_niceness(_=None):
    import os
    import threading

    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_the_embedded_workers_yield_the_cores_to_the_kernel(client):
    # Trials that keep every core busy must not make the kernel (trial loop, scheduler, views) wait for one.
    import os

    from jupyter_dist.cluster._worker_plugins import WORKER_NICENESS

    kernel = os.getpriority(os.PRIO_PROCESS, 0)
    assert set(client.gather(client.map(_thread_niceness, range(4), pure=False))) == {
        kernel + WORKER_NICENESS
    }
    on_their_loops = client.run(_thread_niceness)  # the worker's event loop thread too
    assert set(on_their_loops.values()) == {kernel + WORKER_NICENESS}


def test_each_gpu_goes_to_a_worker_of_its_own_that_sees_it_alone_and_declares_it():
    # What local_client() gives the embedded cluster on a GPU machine (local_gpus(): one CUDA_VISIBLE_DEVICES
    # value per GPU). No GPU is needed to see where the devices went: the workers' environment and resources.
    import os

    from distributed import Client

    from jupyter_dist.cluster._local_cluster import EmbeddedLocalCluster

    with (
        EmbeddedLocalCluster(
            gpus=["3", "GPU-5f0c"],
            n_workers=3,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        declared = {w: info["resources"] for w, info in client.scheduler_info()["workers"].items()}
        name = {w: info["name"] for w, info in client.scheduler_info()["workers"].items()}
    by_name = {name[w]: (seen[w], declared[w]) for w in seen}
    assert by_name == {0: ("3", {"GPU": 1}), 1: ("GPU-5f0c", {"GPU": 1}), 2: (None, {})}


def test_without_an_nvidia_driver_the_embedded_cluster_declares_no_gpus():
    import os

    import pytest

    from jupyter_dist.cluster._embedded import local_gpus

    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver (tests/gpu covers the embedded cluster there)")
    assert local_gpus() == []
