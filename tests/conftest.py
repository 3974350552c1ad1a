"""Shared fixtures: one real embedded LocalCluster (2 worker processes x 1 thread) for the whole session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def client():
    import jupyter_dist

    client = jupyter_dist.get_client("local", n_workers=2, threads_per_worker=1)
    yield client
    jupyter_dist.close_local_cluster()
