"""Across hosts against loopback, TLS on and off: dispatch, paced streaming and 2-rank DDP on four clusters
(loopback and network namespaces, ``tcp://`` and ``tls://``). Needs trustme; root and iproute2 for the hosts. No
target. Method: docs/performance/clusters.md. Run: ``.venv/bin/python bench/bench_network.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _runner
import bench_streaming
from _common import DASK, free_port
from _runner import measuring
from _workloads import data_parallel_mlp

TESTS = Path(__file__).resolve().parent.parent / "tests"  # tests/namespaces.py: the multi-host tests' hosts
ROUNDS = 4
DDP_STEPS = 10
DDP_WARMUP = 3  # bench_ddp's
QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


def certificates(root: Path, addresses: list[str]) -> dict[str, list[str]]:
    """A test CA (trustme) and a certificate per role, valid for ``addresses``: each role's `--tls-*` arguments."""
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    args = {}
    for role in ("scheduler", "worker", "client"):
        issued = ca.issue_cert("localhost", *addresses)
        issued.cert_chain_pems[0].write_to_path(str(root / f"{role}.pem"))
        issued.private_key_pem.write_to_path(str(root / f"{role}-key.pem"))
        args[role] = ["--tls-ca-file", str(root / "ca.pem"), "--tls-cert", str(root / f"{role}.pem")]
        args[role] += ["--tls-key", str(root / f"{role}-key.pem")]
    return args


def scheduler_args(protocol: str, host: str, port: int, tls: dict | None) -> list[str]:
    args = [DASK, "scheduler", "--protocol", protocol, "--host", host, "--port", str(port)]
    return [*args, "--dashboard-address", ":0", *(tls["scheduler"] if tls else [])]


def loopback_cluster(protocol: str, tls: dict | None, started: list[subprocess.Popen]) -> str:
    port = free_port()
    started.append(subprocess.Popen(scheduler_args(protocol, "127.0.0.1", port, tls), **QUIET))
    address = f"{protocol}://127.0.0.1:{port}"
    worker = [DASK, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"]
    started.append(subprocess.Popen([*worker, *(tls["worker"] if tls else [])], **QUIET))
    return address


def hosts_cluster(net, protocol: str, tls: dict | None, started: list[subprocess.Popen]) -> str:
    # in the scheduler host's own namespace: nothing else listens there
    port = 8786 if protocol == "tcp" else 8787
    started.append(net.popen("sched", scheduler_args(protocol, net.address("sched"), port, tls), None))
    address = f"{protocol}://{net.address('sched')}:{port}"
    for host in ("w1", "w2"):
        worker = [DASK, "worker", address, "--host", net.address(host), "--nthreads", "1", "--no-dashboard"]
        worker += tls["worker"] if tls else []
        started.append(net.popen(host, worker, None, env=dict(os.environ)))
    return address


def figures(client) -> dict:
    import jupyter_dist as jd

    channel = bench_streaming.channel(client)  # then the ranks
    ddp = jd.data_parallel(
        data_parallel_mlp, workers=2, threads_per_rank=1, cluster=client, progress=False, store=False,
        steps=DDP_STEPS, warmup=DDP_WARMUP,
    )  # fmt: skip
    return channel | {"ddp_2_ranks_samples_per_s": ddp.result["samples_per_s"]}


def main() -> dict:
    from distributed import Client, Security

    sys.path.insert(0, str(TESTS))
    from namespaces import Network, can_make_namespaces

    net = Network(names=("sched", "w1", "w2"), outside=True) if can_make_namespaces() else None
    root = Path(tempfile.mkdtemp(prefix="bench-network-"))
    tls = certificates(root, ["127.0.0.1", *([net.address(h) for h in net.names] if net else [])])
    security = Security(
        tls_ca_file=str(root / "ca.pem"),
        tls_client_cert=str(root / "client.pem"),
        tls_client_key=str(root / "client-key.pem"),
        require_encryption=True,
    )
    started: list[subprocess.Popen] = []
    clients: dict[str, Client] = {}
    runs: dict[str, list[dict]] = {}
    hosts = "dask scheduler and 2 x dask worker --nthreads 1, each in a network namespace on a bridge; this "
    hosts += "process over the bridge" + ("" if net else " (not run: needs root and iproute2)")
    parameters = {
        "rounds": ROUNDS,
        "clusters": {
            "loopback": "dask scheduler + dask worker --nworkers 2 --nthreads 1 on 127.0.0.1",
            "hosts": hosts,
        },
        **bench_streaming.CHANNEL_PARAMETERS,
        "ddp": f"bench_ddp's MLP (_workloads.data_parallel_mlp), 2 ranks x 1 thread, {DDP_STEPS} timed steps",
    }
    with measuring("network", parameters, note=True) as result, contextlib.ExitStack() as stack:
        if net:
            net.make()
            stack.callback(net.remove)
        stack.callback(stop_all, started)
        addresses = {
            "loopback tcp": loopback_cluster("tcp", None, started),
            "loopback tls": loopback_cluster("tls", tls, started),
        }
        if net:
            addresses["hosts tcp"] = hosts_cluster(net, "tcp", None, started)
            addresses["hosts tls"] = hosts_cluster(net, "tls", tls, started)
        for name, address in addresses.items():
            secure = {"security": security} if name.endswith("tls") else {}
            clients[name] = Client(address, timeout="30s", set_as_default=False, **secure)
            stack.callback(clients[name].close)
            clients[name].wait_for_workers(2, timeout=60)
            figures(clients[name])  # warm-up
            runs[name] = []
        for _ in range(ROUNDS):
            for name, client in clients.items():
                runs[name].append(figures(client))
        medians = {name: _runner.medians(rs) for name, rs in runs.items()}
        pairs = [("loopback tls", "loopback tcp"), ("hosts tcp", "loopback tcp"), ("hosts tls", "hosts tcp")]
        result.update(
            median=medians,
            all=runs,
            ratios={f"{a} vs {b}": ratios(medians[a], medians[b]) for a, b in pairs if a in medians},
        )
    return result


def ratios(a: dict, b: dict) -> dict:
    return {
        "dispatch": a["dispatch_trials_per_s"] / b["dispatch_trials_per_s"],
        "stream_p50": a["stream_p50_s"] / b["stream_p50_s"],
        "ddp_samples_per_s": a["ddp_2_ranks_samples_per_s"] / b["ddp_2_ranks_samples_per_s"],
    }


def stop_all(started: list[subprocess.Popen]) -> None:
    for process in reversed(started):  # only the processes started here, by their PID
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    _runner.main("network", main, quick={"ROUNDS": 1})
