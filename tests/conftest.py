"""Shared fixtures: one real embedded LocalCluster (2 worker processes x 1 thread) for the whole session."""

from __future__ import annotations

import functools
import os
import tempfile

import pytest
from _pytest.nodeid import coerce_node_id  # see pytest_collection_modifyitems


def pytest_configure(config):
    # Every experiment of the suite (and of the kernels the notebook tests start) is recorded in a store of the
    # suite's own, never in the user's Jupyter data directory: one per xdist worker too (a worker inherits the
    # controller's environment, and a kernel's run names count the runs of its store before them).
    if "JUPYTER_DIST_STORE" not in os.environ or os.environ.get("JUPYTER_DIST_TESTS_STORE"):
        os.environ["JUPYTER_DIST_STORE"] = os.path.join(
            tempfile.mkdtemp(prefix="jupyter_dist-tests-"), "store.sqlite"
        )
        os.environ["JUPYTER_DIST_TESTS_STORE"] = "1"


@pytest.fixture(autouse=True)
def fresh_store(tmp_path, monkeypatch):
    """Each test records into a store of its own, so the names it sees are the ones its runs chose."""
    path = str(tmp_path / "experiments.sqlite")
    monkeypatch.setenv("JUPYTER_DIST_STORE", path)
    return path


@pytest.fixture(autouse=True)
def _no_server_announcements_left_behind():
    """A jupyter server a test starts in this process tells its kernels (through the environment) where to link
    dashboards (with jupyter-server-proxy) and which view to draw (serving JupyterLab); the next test's runs are
    not under that server."""
    yield
    os.environ.pop("JUPYTER_DIST_PROXY_PREFIX", None)
    os.environ.pop("JUPYTER_DIST_FRONTEND", None)


@pytest.fixture(scope="session")
def client():
    import jupyter_dist

    client = jupyter_dist.get_client("local", n_workers=2, threads_per_worker=1)
    yield client
    jupyter_dist.close_local_cluster()


# The common case of an experiment in a test: on the shared cluster, silent, random sampling unless the test
# says otherwise (keywords given to the call override these).
@pytest.fixture
def run_hpo(client):
    import jupyter_dist

    return functools.partial(jupyter_dist.hpo, sampler="random", cluster=client, progress=False)


@pytest.fixture
def run_ablation(client):
    import jupyter_dist

    return functools.partial(jupyter_dist.ablation, cluster=client, progress=False)


@pytest.fixture
def run_ddp(client):
    import jupyter_dist

    return functools.partial(jupyter_dist.data_parallel, cluster=client, progress=False)


# `make test` runs the suite on two xdist workers (`-n 2 --dist loadgroup`): most of its time is spent waiting on
# servers, browsers, clusters and timeouts, not computing. Each module stays on one worker (its module-scoped
# servers start once), and a folder whose modules share something runs on one worker as one group: tests/docs'
# modules read one session-scoped build of the site (a worker of their own would build it again), and
# tests/slurm's modules each start a Slurm whose node is this machine's hostname.
ONE_GROUP_FOLDERS = ("docs", "slurm")
# The longest groups start first, so neither worker is left with a long module at the end (the docs build, the
# browser tests, the several-host and the hub tests).
LONGEST_FIRST = ("docs", "lab", "multihost", "hub", "slurm")


def pytest_collection_modifyitems(config, items):
    def folder(item) -> str:
        parts = item.nodeid.split("/")
        return parts[1] if len(parts) > 2 else ""

    grouped = getattr(config.option, "loadgroup", False)  # an xdist worker of `--dist loadgroup`
    for item in items:
        name = folder(item)
        group = name if name in ONE_GROUP_FOLDERS else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        if grouped:
            # xdist 3.8 names the group in the nodeid (its "@group" suffix) by setting item._nodeid, which pytest
            # 9.2 no longer reads: a node's id is its _id. Unnamed, no group held, and each module ran wherever it
            # fell: tests/docs' build of the site ran once on each worker.
            item._id = coerce_node_id(f"{item.nodeid}@{group}")

    def rank(item) -> int:
        name = folder(item)
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module's own order is kept
