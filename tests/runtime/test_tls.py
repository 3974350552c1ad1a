"""TLS: a `tls://` Dask scheduler and workers with certificates from a CA the test makes (trustme). HPO (its
reports, logs and stop flags travel over the same TLS connections) and a 2-rank data-parallel job run there
through `distributed.Security` or through Dask's `distributed.comm.tls.*` config; a client without a certificate
is refused."""

import sys

import cloudpickle
import dask
import pytest
import trustme
from dask_processes import dask_cluster

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.cluster import forget_cluster

# The trial functions below travel by value: the `dask worker` processes cannot import this test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(address, the client's {"ca", "cert", "key"} files, a client made with them) of a TLS scheduler with 2
    TLS workers, all on 127.0.0.1."""
    from distributed import Client, Security

    root = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    for role in ("scheduler", "worker", "client"):
        issued = ca.issue_cert("127.0.0.1", "localhost", common_name=f"jupyter-dist-test-{role}")
        issued.cert_chain_pems[0].write_to_path(str(root / f"{role}.pem"))
        issued.private_key_pem.write_to_path(str(root / f"{role}-key.pem"))

    def certs(role: str) -> list[str]:
        return ["--tls-ca-file", str(root / "ca.pem"), "--tls-cert", str(root / f"{role}.pem")] + [
            "--tls-key",
            str(root / f"{role}-key.pem"),
        ]

    files = {
        "ca": str(root / "ca.pem"),
        "cert": str(root / "client.pem"),
        "key": str(root / "client-key.pem"),
    }
    security = Security(
        tls_ca_file=files["ca"],
        tls_client_cert=files["cert"],
        tls_client_key=files["key"],
        require_encryption=True,
    )
    made = {}

    def connect(address: str):
        made["client"] = Client(address, security=security, timeout="30s", set_as_default=False)
        return made["client"]

    workers = [["--nworkers", "2", "--nthreads", "1", *certs("worker")]]
    with dask_cluster(workers, protocol="tls", scheduler_args=certs("scheduler"), connect=connect) as address:
        try:
            yield address, files, made["client"]
        finally:
            made["client"].close()


def _reporting(x=0.0):
    for step in range(5):
        jd.report(step=step, y=x * step)
    print("trained over TLS")
    return x


def test_hpo_runs_over_tls_with_a_client_of_its_own_security(tls):
    _, _, client = tls
    exp = jd.hpo(
        _reporting,
        {"x": space.uniform(0, 1)},
        trials=4,
        metric="y",
        sampler="random",
        cluster=client,
        progress=False,
    )
    assert exp.state == "completed" and len(exp.trials) == 4
    assert len(exp.history) == 20  # every report came back over the TLS connections
    assert "trained over TLS" in exp.logs(0)


def test_a_bare_tls_address_uses_dasks_tls_config(tls):
    address, files, _ = tls
    config = {
        "distributed.comm.tls.ca-file": files["ca"],
        "distributed.comm.tls.client.cert": files["cert"],
        "distributed.comm.tls.client.key": files["key"],
        "distributed.comm.require-encryption": True,
    }
    try:
        with dask.config.set(config):
            exp = jd.hpo(
                lambda x=0.0: x,
                {"x": space.uniform(0, 1)},
                trials=2,
                metric="x",
                cluster=address,
                progress=False,
            )
        assert exp.state == "completed"
    finally:
        forget_cluster(address)


def test_data_parallel_ranks_meet_on_a_tls_cluster(tls):
    _, _, client = tls
    # Both workers: once (a fresh-clone run) one was missing here, gone or restarting after the tests before.
    client.wait_for_workers(2, timeout=60)

    def train():
        import torch

        import jupyter_dist as jd

        model = jd.prepare(torch.nn.Linear(4, 1))
        loss = model(torch.ones(8, 4)).sum()
        loss.backward()
        jd.report(step=0, loss=float(loss))
        return jd.world_size()

    exp = jd.data_parallel(train, workers=2, cluster=client, progress=False)
    assert exp.state == "completed" and exp.result == 2


def test_a_client_without_a_certificate_is_told_what_is_missing(tls):
    address, files, _ = tls
    with (
        dask.config.set({"distributed.comm.tls.ca-file": files["ca"]}),
        pytest.raises(
            jd.ClusterError, match="is a TLS scheduler and this kernel has no TLS certificate for it"
        ),
    ):
        jd.get_client(address)


def test_a_client_whose_certificate_another_ca_signed_is_refused(tls, tmp_path):
    address, files, _ = tls
    stranger = trustme.CA().issue_cert("127.0.0.1")
    stranger.cert_chain_pems[0].write_to_path(str(tmp_path / "stranger.pem"))
    stranger.private_key_pem.write_to_path(str(tmp_path / "stranger-key.pem"))
    config = {
        "distributed.comm.tls.ca-file": files[
            "ca"
        ],  # it trusts the scheduler; the scheduler does not trust it
        "distributed.comm.tls.client.cert": str(tmp_path / "stranger.pem"),
        "distributed.comm.tls.client.key": str(tmp_path / "stranger-key.pem"),
    }
    with (
        dask.config.set(config),
        pytest.raises(jd.ClusterError, match=f"could not reach the Dask scheduler at '{address}'"),
    ):
        jd.get_client(address)
    assert not forget_cluster(address)  # the refused client was not kept
