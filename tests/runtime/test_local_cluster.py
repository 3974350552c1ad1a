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


def _embedded_gpu_cluster(gpus, types, n_workers):
    from jupyter_dist.cluster._local_cluster import EmbeddedLocalCluster

    return EmbeddedLocalCluster(
        gpus=gpus,
        gpu_types=types,
        n_workers=n_workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=":0",
    )


def _layout(client) -> dict:
    """Each worker's name -> (the CUDA_VISIBLE_DEVICES it sees, the resources it declares)."""
    import os

    seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return {info["name"]: (seen[w], info["resources"]) for w, info in workers.items()}


def test_each_gpu_goes_to_a_worker_of_its_own_that_sees_it_alone_and_declares_it_and_its_type():
    # What local_client() gives the embedded cluster on a GPU machine (local_gpus(): one CUDA_VISIBLE_DEVICES
    # value per GPU; local_gpu_types(): their types). No GPU is needed to see where the devices went: the workers'
    # environment and resources.
    from distributed import Client

    with _embedded_gpu_cluster(["3", "GPU-5f0c"], ["H100", None], 3) as cluster, Client(cluster) as client:
        assert _layout(client) == {
            "gpu3": ("3", {"GPU": 1, "GPU-H100": 1}),
            "gpuGPU-5f0c": ("GPU-5f0c", {"GPU": 1}),
            2: (None, {}),
        }


def test_trials_of_a_quarter_gpu_get_four_worker_processes_on_each_gpu_and_run_side_by_side():
    """The embedded cluster lays its GPU workers out for the run's share: one single-thread process per share, so
    each packed trial has its process (and its memory cap) to itself. Laid out again for another share."""
    import json

    from dask_processes import most_at_once
    from distributed import Client

    import jupyter_dist as jd
    from jupyter_dist import space
    from jupyter_dist.cluster import forget_cluster

    def on_share(x=0.0):
        import os
        import time

        import jupyter_dist

        start = time.time()
        time.sleep(0.5)
        where = {
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "devices": [d.index for d in jupyter_dist.devices()],
        }
        print(json.dumps({**where, "start": start, "end": time.time()}))
        return x

    with _embedded_gpu_cluster(["0"], ["H100"], 2) as cluster, Client(cluster) as client:
        try:
            exp = jd.hpo(
                on_share,
                {"x": space.uniform(0, 1)},
                trials=4,
                metric="x",
                cluster=cluster,
                gpus_per_trial=0.25,
                progress=False,
            )
            assert exp.state == "completed", exp.error
            shares = {name: v for name, v in _layout(client).items() if name != 1}
            assert shares == {f"gpu0-share{i}of4": ("0", {"GPU": 0.25, "GPU-H100": 0.25}) for i in range(4)}
            runs = [json.loads(exp.logs(t).strip().splitlines()[-1]) for t in exp.trials["trial_id"]]
            assert all(r["visible"] == "0" and r["devices"] == [0] for r in runs)
            assert most_at_once([(r["start"], r["end"]) for r in runs]) > 2
            jd.hpo(
                on_share,
                {"x": space.uniform(0, 1)},
                trials=1,
                metric="x",
                cluster=cluster,
                gpus_per_trial=0.5,
                progress=False,
            )
            assert {name for name in _layout(client) if name != 1} == {"gpu0-share0of2", "gpu0-share1of2"}
        finally:
            forget_cluster(cluster)


def test_without_an_nvidia_driver_the_embedded_cluster_declares_no_gpus():
    import os

    import pytest

    from jupyter_dist.cluster._embedded import local_gpus

    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver (tests/gpu covers the embedded cluster there)")
    assert local_gpus() == []
