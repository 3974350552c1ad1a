"""Across hosts against loopback, TLS on and off: dispatch, paced streaming and the compute-bound MLP at 2 ranks
on four clusters of one shape (loopback and network namespaces, each ``tcp://`` and ``tls://``), 4 rounds
interleaved. Needs trustme, root and iproute2 (else loopback alone). No target.

Method: docs/performance/clusters.md, "Across hosts, TLS on and off". Run: ``.venv/bin/python
bench/bench_network.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _runner
import bench_streaming
from _common import CpuMonitor, contention_note, free_port, header
from _workloads import data_parallel_mlp

TESTS = Path(__file__).resolve().parent.parent / "tests"  # tests/namespaces.py: the multi-host tests' hosts
ROUNDS = 4
DISPATCH_TRIALS = 300
STREAM_SECONDS = 3.0
STREAM_RATE = 2500.0
DDP_STEPS = 10
DDP_WARMUP = 3  # bench_ddp's
DASK = str(Path(sys.executable).with_name("dask"))
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


def loopback_cluster(protocol: str, tls: dict | None, started: list[subprocess.Popen]) -> str:
    port = free_port()
    address = f"{protocol}://127.0.0.1:{port}"
    scheduler = [DASK, "scheduler", "--protocol", protocol, "--host", "127.0.0.1", "--port", str(port)]
    started.append(
        subprocess.Popen([*scheduler, "--dashboard-address", ":0", *tls_for(tls, "scheduler")], **QUIET)
    )
    worker = [DASK, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"]
    started.append(subprocess.Popen([*worker, *tls_for(tls, "worker")], **QUIET))
    return address


def hosts_cluster(net, protocol: str, tls: dict | None, started: list[subprocess.Popen]) -> str:
    port = (
        8786 if protocol == "tcp" else 8787
    )  # the scheduler host's own namespace: nothing else listens there
    address = f"{protocol}://{net.address('sched')}:{port}"
    scheduler = [
        DASK,
        "scheduler",
        "--protocol",
        protocol,
        "--host",
        net.address("sched"),
        "--port",
        str(port),
    ]
    scheduler += ["--dashboard-address", ":0", *tls_for(tls, "scheduler")]
    started.append(net.popen("sched", scheduler, None))
    for host in ("w1", "w2"):
        worker = [DASK, "worker", address, "--host", net.address(host), "--nthreads", "1", "--no-dashboard"]
        started.append(net.popen(host, [*worker, *tls_for(tls, "worker")], None, env=dict(os.environ)))
    return address


def tls_for(tls: dict | None, role: str) -> list[str]:
    return tls[role] if tls else []


def figures(client) -> dict:
    import jupyter_dist as jd

    channel = bench_streaming.channel(client, DISPATCH_TRIALS, STREAM_SECONDS, STREAM_RATE)  # then the ranks
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
    cpu = CpuMonitor()
    wall0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
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
    contention = cpu.stop()
    medians = {name: _runner.medians(rs) for name, rs in runs.items()}
    result = header(
        "network",
        {
            "rounds": ROUNDS,
            "clusters": {
                "loopback": "dask scheduler + dask worker --nworkers 2 --nthreads 1 on 127.0.0.1",
                "hosts": "dask scheduler and 2 x dask worker --nthreads 1, each in a network namespace on a "
                "bridge; this process over the bridge"
                + ("" if net else " (not run: needs root and iproute2)"),
            },
            "dispatch_trials": DISPATCH_TRIALS,
            "stream": f"2 trials x {STREAM_RATE:g} reports/s for {STREAM_SECONDS:g} s",
            "ddp": f"bench_ddp's MLP (_workloads.data_parallel_mlp), 2 ranks x 1 thread, {DDP_STEPS} timed steps",
        },
    )
    result.update(
        {
            "median": medians,
            "all": runs,
            "ratios": {
                f"{a} vs {b}": ratios(medians[a], medians[b])
                for a, b in [
                    ("loopback tls", "loopback tcp"),
                    ("hosts tcp", "loopback tcp"),
                    ("hosts tls", "hosts tcp"),
                ]
                if a in medians
            },
            "wall_s": time.perf_counter() - wall0,
            "cpu_contention": contention,
            "note": contention_note(contention),
        }
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
