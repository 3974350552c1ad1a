"""An experiment's first task names why it cannot run, against real `dask scheduler` / `dask worker` processes:
no worker, busy workers, workers (or a scheduler) whose Python cannot import jupyter_dist. (A function needing a
module only the kernel has: test_cluster.py.)"""

from __future__ import annotations

import os
import time
import uuid

import pytest
from dask_processes import dask_cluster

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.trials import DaskLauncher

# Run first by every Python that has this folder on its path: jupyter_dist cannot be imported there.
HIDE_JUPYTER_DIST = """
import sys


class HideJupyterDist:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "jupyter_dist":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, HideJupyterDist())
"""


@pytest.fixture(scope="module")
def without_jupyter_dist(tmp_path_factory) -> dict[str, str]:
    """The environment of a process whose Python cannot import jupyter_dist (a sitecustomize hides it)."""
    folder = tmp_path_factory.mktemp("hide")
    (folder / "sitecustomize.py").write_text(HIDE_JUPYTER_DIST)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _check(address: str, timeout: float) -> None:
    launcher = DaskLauncher(jd.get_client(address), lambda x=0.0: x, uuid.uuid4().hex)
    launcher.check_function(timeout=timeout)


def test_a_scheduler_without_workers_is_named_with_how_to_start_them():
    with dask_cluster([]) as address:
        started = time.monotonic()
        with pytest.raises(
            jd.TrialFunctionError,
            match=(
                rf"no Dask worker joined the cluster within 3s: the Dask scheduler at {address} has no workers\. "
                rf"Start some \(`dask worker {address}`\)"
            ),
        ):
            _check(address, timeout=3)
        assert time.monotonic() - started < 10


def test_workers_busy_with_other_work_are_told_apart_from_no_workers():
    with dask_cluster([["--nthreads", "1"]]) as address:
        client = jd.get_client(address)
        other = client.submit(time.sleep, 6, pure=False)  # longer than the check waits
        while not any(client.processing().values()):
            time.sleep(0.05)
        with pytest.raises(
            jd.TrialFunctionError,
            match=r"none of the cluster's 1 Dask workers took a first task within 2s \(1 of them busy",
        ):
            _check(address, timeout=2)
        client.cancel(other)


def test_workers_that_cannot_import_jupyter_dist_are_named_within_seconds_and_survive(without_jupyter_dist):
    """Handed a task naming jupyter_dist's probe, such a worker could not read its stream from the scheduler and
    closed; the experiment waited 60 s and then asked whether the workers had jupyter_dist installed."""
    with dask_cluster([["--nthreads", "1"]], worker_env=without_jupyter_dist) as address:
        started = time.monotonic()
        with pytest.raises(
            jd.TrialFunctionError,
            match=(
                r"the Dask workers cannot import jupyter_dist \(ModuleNotFoundError: No module named "
                r"'jupyter_dist'; workers' Python 3\.[0-9.]+ at \S+\), so they cannot run any trial: install "
                rf"jupyter_dist {jd.__version__} \(this kernel's version\) in the workers' environment"
            ),
        ):
            jd.hpo(lambda x=0.0: x, {"x": space.uniform(0, 1)}, metric="x", cluster=address, progress=False)
        assert time.monotonic() - started < 30  # not the 60 s wait it was
        assert len(jd.get_client(address).scheduler_info()["workers"]) == 1  # still there


def test_a_scheduler_that_cannot_import_jupyter_dist_is_named(without_jupyter_dist):
    with dask_cluster([["--nthreads", "1"]], scheduler_env=without_jupyter_dist) as address:
        with pytest.raises(
            jd.TrialFunctionError,
            match=(
                rf"the Dask scheduler at {address} cannot read jupyter_dist's tasks \(distributed: error during "
                r"deserialization of the task graph\): install jupyter_dist"
            ),
        ):
            _check(address, timeout=30)
