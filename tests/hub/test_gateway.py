"""cluster="gateway" with nothing set but the gateway's address and login, against a real dask-gateway-server
(local backend, no hub): a first experiment runs on the gateway's own defaults (0 workers), and where the gateway
cannot give it any worker, the cell says so within seconds and names what to change."""

from __future__ import annotations

import contextlib
import time
import uuid
import warnings

import dask
import pytest
from dask_gateway import Gateway, GatewayWarning

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.cluster import forget_cluster
from jupyter_dist.trials import DaskLauncher

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def login(gateway):
    """Log this kernel in to the gateway as a user; the user's cluster is shut down after the test."""
    with contextlib.ExitStack() as settings:
        yield lambda user: settings.enter_context(dask.config.set(gateway.login(user)))
        forget_cluster("gateway")


def hpo_on_the_gateway():
    def train(x=0.0):  # defined in a function: pickled by value, for workers that cannot import this module
        jd.report(step=0, y=x)
        return x

    return jd.hpo(train, {"x": space.uniform(0, 1)}, trials=4, metric="y", cluster="gateway", progress=False)


def ranks_agreeing():
    def ranks_agree(steps=3):  # defined in a function: pickled by value, as train above
        import torch

        total = torch.ones(1)
        torch.distributed.all_reduce(total)
        for step in range(steps):
            jd.report(step=step, world=float(total))
        return int(total)

    return ranks_agree


def test_a_first_experiment_runs_on_the_gateways_own_defaults(login):
    """No jupyter_dist.gateway.workers or adapt: the cluster adapts from 0 workers to the experiment's size.
    Before, the gateway's default of 0 workers left the first task waiting 60 s, then blamed the workers."""
    login("alice")
    exp = hpo_on_the_gateway()
    assert exp.state == "completed" and len(exp.trials) == 4
    info = jd.cluster_info("gateway")
    assert info.workers >= 1 and "adapting between 0 and 2 workers" in repr(info)
    jd.get_client("gateway", workers_wanted=5)  # a later experiment that can use more
    assert "adapting between 0 and 5 workers" in repr(jd.cluster_info("gateway"))


def test_a_first_data_parallel_run_gets_its_ranks_on_the_gateways_own_defaults(login):
    """A data-parallel trial's ranks are submitted only once all can start, so adaptive scaling (which follows
    queued tasks) would never start workers for them: the run raises the default size's minimum to its ranks
    and waits for them instead of refusing at once with too few workers, then gives the minimum back."""
    login("alice")
    exp = jd.data_parallel(ranks_agreeing(), workers=2, cluster="gateway", progress=False)
    assert exp.state == "completed" and exp.result == 2
    assert "adapting between 0 and 2 workers" in repr(jd.cluster_info("gateway"))


def test_an_adaptive_cluster_below_the_ranks_grows_for_the_run_and_gives_its_minimum_back(login):
    """Sized by the user: before, the run failed at once with 'the cluster has 1' (adaptive scaling never grew
    it for ranks that wait for each other)."""
    login("alice")
    jd.use_cluster("gateway", adapt=(1, 4))
    exp = jd.data_parallel(ranks_agreeing(), workers=3, cluster="gateway", progress=False)
    assert exp.state == "completed" and exp.result == 3
    assert "adapting between 1 and 4 workers" in repr(jd.cluster_info("gateway"))


def test_ranks_beyond_the_gateways_limit_are_refused_naming_both_numbers(login):
    login("capped")  # at most 1 worker
    jd.get_client("gateway")
    with pytest.raises(
        jd.ClusterError,
        match=r"needs 2 workers at once \(2 ranks\), and the Dask Gateway's limit .* allows this cluster 1: ask for "
        r"at most 1",
    ):
        jd.data_parallel(ranks_agreeing(), workers=2, cluster="gateway", progress=False)
    assert "adapting between 0 and 1 workers" in repr(jd.cluster_info("gateway"))  # given back


def test_a_gateway_cluster_object_of_the_user_s_own_grows_for_the_run(gateway):
    """Not this kernel's cluster: the one the user made and passed as cluster=, its adaptive bounds read from
    its scheduler, raised for the run and put back after it."""

    def adaptive_bounds(dask_scheduler):  # defined in the test: pickled by value for the gateway's scheduler
        service = dask_scheduler.services["gateway"]
        return service.minimum, service.maximum

    with dask.config.set(gateway.login("bob")):
        users_gateway = Gateway()
        cluster = users_gateway.new_cluster(shutdown_on_close=True)
    try:
        cluster.adapt(minimum=0, maximum=3)
        exp = jd.data_parallel(ranks_agreeing(), workers=2, cluster=cluster, progress=False)
        assert exp.state == "completed" and exp.result == 2
        client = jd.get_client(cluster)
        assert client.run_on_scheduler(adaptive_bounds) == (0, 3)
    finally:
        forget_cluster(cluster)
        cluster.shutdown()
        users_gateway.close()


def test_a_gateway_that_allows_no_workers_says_so_within_seconds(login):
    login("starved")  # the admin's cluster_max_workers is 0 for this user
    started = time.monotonic()
    with pytest.raises(
        jd.ClusterError,
        match=r"this Dask Gateway allows your clusters no workers \(c\.ClusterConfig\.cluster_max_workers is 0",
    ):
        hpo_on_the_gateway()
    assert time.monotonic() - started < 20
    # The cluster no trial could run on was shut down. (This Gateway is not closed by hand: it would raise from
    # its __del__ later.)
    assert not Gateway().list_clusters()


def test_the_default_size_stays_within_the_gateways_limit(login):
    login("capped")  # at most 1 worker
    with warnings.catch_warnings():
        warnings.simplefilter("error", GatewayWarning)  # clipping jupyter_dist's own default is not news
        jd.get_client("gateway", workers_wanted=4)
    assert "adapting between 0 and 1 workers" in repr(jd.cluster_info("gateway"))
    with pytest.warns(GatewayWarning, match="exceed resource limit of 1 workers"):
        jd.use_cluster("gateway", adapt=(0, 3))  # what the user asked for themselves: the gateway's word
    assert "adapting between 0 and 1 workers" in repr(jd.cluster_info("gateway"))


def test_a_gateway_cluster_scaled_to_no_workers_fails_at_once_naming_the_setting(login):
    login("alice")
    jd.use_cluster("gateway", workers=0)
    started = time.monotonic()
    with pytest.raises(
        jd.TrialFunctionError,
        match=r"has 0 workers and is not adaptive .*set jupyter_dist\.gateway\.workers / jupyter_dist\.gateway\.adapt",
    ):
        hpo_on_the_gateway()
    assert time.monotonic() - started < 5


def test_a_gateway_that_starts_no_worker_is_named_with_the_settings(login):
    login("broken")  # its workers' command fails
    client = jd.get_client("gateway")
    launcher = DaskLauncher(client, lambda x=0.0: x, uuid.uuid4().hex)
    with pytest.raises(
        jd.TrialFunctionError,
        match=(
            r"no Dask worker joined the cluster within 8s: the Dask Gateway cluster \w+ adapts between 0 and 2 "
            r"workers, and the gateway started none: .* Check jupyter_dist\.gateway\.options"
        ),
    ):
        launcher.check_function(timeout=8)
