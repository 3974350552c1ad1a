"""TLS on vs off: the same experiments on two clusters of the same shape, one `tls://` (certificates from a test CA),
one `tcp://`, interleaved in one run.

Each cluster is a `dask scheduler` and `dask worker --nworkers 2 --nthreads 1` on 127.0.0.1, started and stopped
here. Measured on each, 2 rounds after a warm-up: dispatch (300 no-op trials, bench_dispatch's), streaming (2
trials at 2 x 2,500 reports/s for 3 s, bench_streaming's: delivered/s, p50/p99 report->kernel latency) and
data-parallel training at 2 ranks (bench_ddp's MLP, 10 timed steps: samples/s). The data-parallel gradients
travel over gloo's own TCP connections, which TLS on the Dask side does not cover (README, Security): the
difference there is the rendezvous and the reports only.

Run: ``.venv/bin/python bench/bench_tls.py`` (writes bench/results/tls.json).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_ddp  # noqa: E402
import bench_dispatch  # noqa: E402
import bench_streaming  # noqa: E402
import cloudpickle  # noqa: E402
from _common import CpuMonitor, contention_note, free_port, header, median, write_result  # noqa: E402

ROUNDS = 2
DISPATCH_TRIALS = 300
STREAM_SECONDS = 3.0
STREAM_RATE = 2500.0
DDP_STEPS = 10
DASK = str(Path(sys.executable).with_name("dask"))


def certificates(root: Path) -> dict[str, list[str]]:
    """A test CA (trustme) and a certificate per role: each role's `--tls-*` arguments."""
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    args = {}
    for role in ("scheduler", "worker", "client"):
        issued = ca.issue_cert("127.0.0.1", "localhost")
        issued.cert_chain_pems[0].write_to_path(str(root / f"{role}.pem"))
        issued.private_key_pem.write_to_path(str(root / f"{role}-key.pem"))
        args[role] = ["--tls-ca-file", str(root / "ca.pem"), "--tls-cert", str(root / f"{role}.pem")]
        args[role] += ["--tls-key", str(root / f"{role}-key.pem")]
    return args


def start_cluster(protocol: str, tls_args: dict[str, list[str]] | None) -> tuple[str, list[subprocess.Popen]]:
    port = free_port()
    address = f"{protocol}://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = [DASK, "scheduler", "--protocol", protocol, "--host", "127.0.0.1", "--port", str(port)]
    scheduler += ["--dashboard-address", ":0", *(tls_args["scheduler"] if tls_args else [])]
    worker = [DASK, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"]
    worker += tls_args["worker"] if tls_args else []
    return address, [subprocess.Popen(scheduler, **quiet), subprocess.Popen(worker, **quiet)]


def figures(client) -> dict:
    import jupyter_dist as jd

    seconds, _ = bench_dispatch.run_ours(client, DISPATCH_TRIALS)
    stream = bench_streaming.run_ours(client, STREAM_SECONDS, STREAM_RATE)
    ddp = jd.data_parallel(
        bench_ddp.train,
        workers=2,
        threads_per_rank=1,
        cluster=client,
        progress=False,
        store=False,
        steps=DDP_STEPS,
    )
    return {
        "dispatch_trials_per_s": DISPATCH_TRIALS / seconds,
        "stream_delivered_per_s": stream["delivered_per_s"],
        "stream_p50_s": stream["latency_s"]["p50"],
        "stream_p99_s": stream["latency_s"]["p99"],
        "stream_lost": stream["lost"],
        "ddp_2_ranks_samples_per_s": ddp.result["samples_per_s"],
    }


def main() -> dict:
    from distributed import Client, Security

    for module in (bench_dispatch, bench_streaming, bench_ddp):  # the workers cannot import them by name
        cloudpickle.register_pickle_by_value(module)
    root = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    tls_args = certificates(root)
    tcp_address, processes = start_cluster("tcp", None)
    tls_address, more = start_cluster("tls", tls_args)
    processes += more
    cpu = CpuMonitor()
    wall0 = time.perf_counter()
    try:
        security = Security(
            tls_ca_file=str(root / "ca.pem"),
            tls_client_cert=str(root / "client.pem"),
            tls_client_key=str(root / "client-key.pem"),
            require_encryption=True,
        )
        clients = {
            "tcp": Client(tcp_address, timeout="30s", set_as_default=False),
            "tls": Client(tls_address, security=security, timeout="30s", set_as_default=False),
        }
        for client in clients.values():
            client.wait_for_workers(2, timeout=60)
            figures(client)  # warm-up
        runs: dict[str, list[dict]] = {"tcp": [], "tls": []}
        for _ in range(ROUNDS):
            for side, client in clients.items():
                runs[side].append(figures(client))
        for client in clients.values():
            client.close()
    finally:
        for process in reversed(processes):  # only the processes started here, by their PID
            process.terminate()
            process.wait(30)
    contention = cpu.stop()
    medians = {side: {key: median([r[key] for r in rs]) for key in rs[0]} for side, rs in runs.items()}
    result = header(
        "tls",
        {
            "rounds": ROUNDS,
            "cluster": "dask scheduler + dask worker --nworkers 2 --nthreads 1 on 127.0.0.1, tcp:// and tls://",
            "dispatch_trials": DISPATCH_TRIALS,
            "stream": f"2 trials x {STREAM_RATE:g} reports/s for {STREAM_SECONDS:g} s",
            "ddp": f"bench_ddp.train, 2 ranks x 1 thread, {DDP_STEPS} timed steps",
        },
    )
    tls, tcp = medians["tls"], medians["tcp"]
    result.update(
        {
            "median": medians,
            "all": runs,
            "ratios_tls_vs_tcp": {
                "dispatch": tls["dispatch_trials_per_s"] / tcp["dispatch_trials_per_s"],
                "stream_p50": tls["stream_p50_s"] / tcp["stream_p50_s"],
                "ddp_samples_per_s": tls["ddp_2_ranks_samples_per_s"] / tcp["ddp_2_ranks_samples_per_s"],
            },
            "wall_s": time.perf_counter() - wall0,
            "cpu_contention": contention,
            "note": contention_note(contention),
        }
    )
    return result


def summary(result: dict) -> str:
    tls, tcp = result["median"]["tls"], result["median"]["tcp"]
    return (
        f"TLS vs tcp: dispatch {tls['dispatch_trials_per_s']:.0f} vs {tcp['dispatch_trials_per_s']:.0f} trials/s; "
        f"streaming p50 {tls['stream_p50_s'] * 1000:.1f} vs {tcp['stream_p50_s'] * 1000:.1f} ms, p99 "
        f"{tls['stream_p99_s'] * 1000:.0f} vs {tcp['stream_p99_s'] * 1000:.0f} ms; data-parallel "
        f"{tls['ddp_2_ranks_samples_per_s']:,.0f} vs {tcp['ddp_2_ranks_samples_per_s']:,.0f} samples/s"
    )


if __name__ == "__main__":
    outcome = main()
    print(write_result("tls", outcome))
    print(summary(outcome))
