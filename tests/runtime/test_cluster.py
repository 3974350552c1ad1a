"""Cluster resolution against real Dask processes: `dask scheduler` / `dask worker` started by the test."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from dask_processes import DASK, dask_cluster, free_port, most_at_once

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.cluster import _current as _cluster
from jupyter_dist.cluster import forget_cluster


@pytest.fixture(scope="module")
def scheduler_address():
    with dask_cluster([["--nthreads", "1", "--nworkers", "1"]]) as address:
        yield address


def test_an_existing_scheduler_runs_the_trials(scheduler_address):
    def train(x=0.0):
        jd.report(step=0, y=x)
        return x

    exp = jd.hpo(
        train,
        {"x": space.uniform(0, 1)},
        trials=3,
        metric="y",
        sampler="random",
        cluster=scheduler_address,
        progress=False,
    )
    assert exp.state == "completed" and len(exp.trials) == 3
    assert len(exp.history) == 3
    assert jd.get_client(scheduler_address) is jd.get_client(scheduler_address)  # later cells reuse it


def test_a_forgotten_cluster_is_connected_afresh_and_runs_on(scheduler_address):
    first = jd.get_client(scheduler_address)
    assert forget_cluster(scheduler_address)
    assert first.status == "closed"
    again = jd.get_client(scheduler_address)
    assert again is not first and again.status == "running"
    assert again.scheduler_info()["workers"]  # the cluster itself was left alone
    # Nothing held: nothing to forget.
    assert not forget_cluster(scheduler_address.replace("tcp://", "tls://"))


def test_forgetting_the_chosen_cluster_puts_the_default_back(scheduler_address, monkeypatch):
    monkeypatch.setattr(_cluster, "_chosen", [])
    monkeypatch.delenv("JUPYTER_DIST_CLUSTER", raising=False)
    local = jd.get_client("local")
    assert jd.use_cluster(scheduler_address).scheduler.address == scheduler_address
    assert jd.get_client().scheduler.address == scheduler_address  # experiments naming none run there
    forget_cluster(scheduler_address)
    assert jd.get_client() is local  # ... and, once it is forgotten, on the default again


def test_the_environment_variable_chooses_the_cluster(scheduler_address, monkeypatch):
    monkeypatch.setattr(_cluster, "_chosen", [])  # nothing chosen with %distribute_cluster in this process
    monkeypatch.setenv("JUPYTER_DIST_CLUSTER", scheduler_address)
    assert jd.get_client().scheduler.address == scheduler_address


def test_an_address_that_does_not_answer_fails_within_seconds():
    started = time.monotonic()
    with pytest.raises(jd.ClusterError, match=r"could not reach the Dask scheduler at 'tcp://127.0.0.1:\d+'"):
        jd.hpo(
            lambda x=0: x, {"x": space.uniform(0, 1)}, metric="x", cluster=f"tcp://127.0.0.1:{free_port()}"
        )
    assert time.monotonic() - started < 15


def test_a_module_the_workers_cannot_import_is_named(tmp_path, monkeypatch, run_hpo):
    (tmp_path / "only_here_mod.py").write_text("def train(x=0.0):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the kernel can import it; the worker processes cannot
    import only_here_mod

    with pytest.raises(
        jd.TrialFunctionError, match="cannot import module 'only_here_mod'.*register_pickle_by_value"
    ):
        run_hpo(
            only_here_mod.train,
            {"x": space.uniform(0, 1)},
            metric="x",
        )

    import cloudpickle

    cloudpickle.register_pickle_by_value(only_here_mod)  # the fix the message suggests
    try:
        exp = run_hpo(
            only_here_mod.train,
            {"x": space.uniform(0, 1)},
            trials=2,
            metric="x",
        )
    finally:
        cloudpickle.unregister_pickle_by_value(only_here_mod)
    assert exp.state == "completed"


def test_a_cluster_object_or_a_client_is_used_as_given(client):
    assert jd.get_client(client) is client
    via_cluster = jd.get_client(
        client.cluster
    )  # what Dask Gateway / dask-kubernetes / dask-jobqueue hand out
    assert via_cluster.scheduler.address == client.scheduler.address
    exp = jd.hpo(
        lambda x=0.0: x,
        {"x": space.uniform(0, 1)},
        trials=2,
        metric="x",
        sampler="random",
        cluster=client.cluster,
        progress=False,
    )
    assert exp.state == "completed"


SCRIPT = """
import jupyter_dist as jd
from jupyter_dist import space


def train(x=0.0):
    jd.report(step=0, y=x)
    return x


if __name__ == "__main__":
    exp = jd.hpo(train, {"x": space.uniform(0, 1)}, trials=4, metric="y", progress=False)
    print(exp.state)
"""


def test_a_script_that_ends_right_after_an_experiment_exits_cleanly(tmp_path):
    """The embedded cluster shuts down at exit without Dask complaining: no late callback refused by the
    exiting interpreter, no finished result lost under a closing client."""
    script = tmp_path / "run_hpo.py"
    script.write_text(SCRIPT)
    for _ in range(3):  # a race: the lost result showed in about half the runs before
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "completed"
        assert "cannot schedule new futures" not in done.stderr
        assert "lose already computed" not in done.stderr
        assert "Traceback" not in done.stderr


WORKER_STATE = """
import json


def state(dask_worker):
    import gc, sys
    import dask
    return {
        "heartbeat_ms": dask_worker.periodic_callbacks["heartbeat"].callback_time,
        "scipy.linalg": "scipy.linalg" in sys.modules,
        "torch": "torch" in sys.modules,
        "frozen": gc.get_freeze_count(),
        "profile": dask.config.get("distributed.worker.profile.enabled"),
        "tick": dask.config.get("distributed.admin.tick.interval"),
    }


if __name__ == "__main__":  # imports here: spawned workers re-import a script's top level, unlike a notebook's
    import time

    import scipy.linalg  # the kernel has it: the embedded cluster's workers should have it before any trial

    import jupyter_dist

    client = jupyter_dist.get_client("local", n_workers=1)
    time.sleep(1.5)  # the scheduler sets a worker's heartbeat interval in its answer to the first heartbeat
    print(json.dumps(list(client.run(state).values())[0]))
    jupyter_dist.close_local_cluster()
"""


def test_the_embedded_clusters_workers_start_warm_and_quiet_unless_configured(tmp_path):
    """Its workers import what the kernel imported (not what it did not) and freeze those objects out of the
    garbage collector's way; Dask's profiler is off, heartbeats come every 2 s instead of 0.5 s; a setting the
    user made in dask config wins."""
    script = tmp_path / "worker_state.py"
    script.write_text(WORKER_STATE)
    env = {**os.environ, "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "50ms"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["scipy.linalg"] and not state["torch"]
    assert state["frozen"] > 10_000
    assert state["profile"] is False
    assert state["tick"] == "50ms"
    assert state["heartbeat_ms"] == 2000


def test_a_scheduler_that_goes_away_ends_the_run_within_seconds_as_interrupted():
    def slow(x=0.0):  # defined here: pickled by value for workers that cannot import this module
        import time

        for step in range(5):
            time.sleep(0.1)
            jd.report(step=step, y=x + step)
        return {"y": x + 5}

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        [DASK, "worker", address, "--nthreads", "1", "--nworkers", "2", "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    killer = threading.Timer(4.0, scheduler.kill)  # mid-run, with trials finished and trials running
    try:
        jd.get_client(address).wait_for_workers(2, timeout=60)
        killer.start()
        started = time.monotonic()
        with pytest.raises(jd.ExperimentFailed, match="lost the Dask scheduler") as failed:
            jd.hpo(
                slow,
                {"x": space.uniform(0, 1)},
                trials=200,
                metric="y",
                pruner=None,
                cluster=address,
                progress=False,
                name="cut",
            )
        took = time.monotonic() - started
        exp = failed.value.experiment
        assert took < 4.0 + 30.0, took  # not a hang
        assert exp.state == "interrupted"
        states = set(exp.trials.state)
        assert "completed" in states and states <= {"completed", "interrupted"}
        stored = jd.load("cut")
        assert stored.state == "interrupted" and "lost the Dask scheduler" in stored.error
        assert stored.trials[["trial_id", "state", "value"]].equals(
            exp.trials[["trial_id", "state", "value"]]
        )
    finally:
        killer.cancel()
        forget_cluster(address)
        for proc in (worker, scheduler):  # only the processes this test started, by their PID
            proc.kill()
            proc.wait(timeout=30)


def test_an_adaptive_cluster_is_filled_to_its_maximum_and_used_as_it_grows():
    """No parallel= given: an adaptive cluster of 1 worker (at most 2) gets 2 trials in flight, the queued one
    makes it grow, and the second worker then runs trials alongside the first."""
    from distributed import LocalCluster

    def slow(x=0.0):
        from distributed import get_client

        # Until the second worker is up (as slow to start as the machine is busy), no trial ends: the run cannot
        # be over before the cluster has grown into it.
        waited = time.monotonic()
        while (
            len(get_client().scheduler_info(n_workers=-1)["workers"]) < 2 and time.monotonic() < waited + 60
        ):
            time.sleep(0.1)
        time.sleep(0.6)
        return x

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        # Any two trials in flight ask for two workers (a 0.1 s target against Dask's 0.5 s guess for a task not
        # measured yet), while one alone asks for one: it is the queued one that makes it grow.
        cluster.adapt(minimum=1, maximum=2, target_duration="0.1s", interval="200ms")
        client = jd.get_client(cluster)
        assert _cluster.adaptive_maximum(client) == 2
        exp = jd.hpo(
            slow,
            {"x": space.uniform(0, 1)},
            trials=12,
            metric="x",
            sampler="random",
            cluster=cluster,
            progress=False,
        )
        assert exp.state == "completed" and len(exp.trials) == 12
        ran = [(r.started, r.started + r.duration) for r in exp.trial_records()]
        assert most_at_once(ran) == 2  # the cluster grew into the run
        assert forget_cluster(cluster)
