"""Dask Gateway: a fresh kernel's time to its first trial (embedded, new and kept Gateway cluster), then dispatch
and paced streaming through the gateway's proxy against a direct scheduler. No target. Method:
docs/performance/clusters.md, "Dask Gateway". Run: ``.venv/bin/python bench/bench_gateway.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _runner
import bench_streaming
from _common import DASK, free_port, median, wait_http
from _runner import measuring

ROUNDS = 3
WORKERS = 2
GATEWAY_SERVER = str(Path(sys.executable).with_name("dask-gateway-server"))

GATEWAY_CONFIG = """
c.DaskGateway.address = "127.0.0.1:{api}"
c.Proxy.address = "127.0.0.1:{proxy}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.LocalBackend.clusters_directory = "{root}/clusters"
c.ClusterConfig.scheduler_cmd = ["{dask}", "scheduler"]
c.ClusterConfig.worker_cmd = ["{dask}", "worker"]
c.ClusterConfig.worker_cores = 1
"""

# A fresh kernel's first experiment: one trial that says when it started.
FIRST_TRIAL = """
import json, time
t0 = time.time()
import jupyter_dist
from jupyter_dist import space

def first(x=0.0):
    return time.time()

exp = jupyter_dist.hpo(first, {"x": space.uniform(0, 1)}, trials=1, metric="value", mode="max",
                       sampler="random", progress=False, store=False)
print(json.dumps({"first_trial_running_s": exp.trial_records()[0].value - t0}))
"""


def gateway_env(proxy: int, keep: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DASK_", "JUPYTER_DIST"))}
    return env | {
        "DASK_GATEWAY__ADDRESS": f"http://127.0.0.1:{proxy}",
        "DASK_GATEWAY__PROXY_ADDRESS": f"gateway://127.0.0.1:{proxy}",
        "DASK_GATEWAY__AUTH__TYPE": "basic",
        "DASK_GATEWAY__AUTH__KWARGS__USERNAME": "bench",
        "DASK_GATEWAY__AUTH__KWARGS__PASSWORD": "",
        "DASK_JUPYTER_DIST__GATEWAY__WORKERS": str(WORKERS),
        "DASK_JUPYTER_DIST__GATEWAY__SHUTDOWN_ON_CLOSE": "False" if keep else "True",
    }


def first_trial(cluster: str, env: dict[str, str]) -> float:
    env = dict(env, JUPYTER_DIST_CLUSTER=cluster)
    done = subprocess.run(
        [sys.executable, "-c", FIRST_TRIAL], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])["first_trial_running_s"]


def stop_all_clusters(env: dict[str, str]) -> None:
    code = (
        "from dask_gateway import Gateway\ng = Gateway()\nfor c in g.list_clusters(): g.stop_cluster(c.name)"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def start(args: list[str], log: Path, env=None) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)


def main() -> dict:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    api, proxy, scheduler_port = free_port(), free_port(), free_port()
    (root / "config.py").write_text(GATEWAY_CONFIG.format(api=api, proxy=proxy, root=root, dask=DASK))
    processes = [start([GATEWAY_SERVER, "-f", str(root / "config.py")], root / "gateway.log")]
    direct = f"tcp://127.0.0.1:{scheduler_port}"
    scheduler = [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(scheduler_port)]
    processes.append(start(scheduler, root / "sched.log"))
    processes.append(
        start([DASK, "worker", direct, "--nworkers", str(WORKERS), "--nthreads", "1"], root / "w.log")
    )
    parameters = {
        "rounds": ROUNDS,
        "workers": f"{WORKERS} x 1 thread (gateway: worker_cores=1; direct: dask worker --nthreads 1)",
        **bench_streaming.CHANNEL_PARAMETERS,
        "gateway": "dask-gateway-server, local backend, simple auth, on 127.0.0.1; TLS to the scheduler",
    }
    with measuring("gateway", parameters, note=True) as result:
        try:
            _gateway_runs(result, proxy, direct)
        finally:
            for process in reversed(processes):
                process.terminate()
                process.wait(30)
    return result


def _gateway_runs(result: dict, proxy: int, direct: str) -> None:
    """The first trials, then the channel through the gateway and direct, side by side, into ``result``."""
    import dask.config
    from distributed import Client

    wait_http(f"http://127.0.0.1:{proxy}/api/health", every=0.3)
    keep, close = gateway_env(proxy, keep=True), gateway_env(proxy, keep=False)
    local_env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_DIST")}
    startup: dict[str, list[float]] = {"embedded": [], "gateway_new": [], "gateway_reused": []}
    for _ in range(ROUNDS):
        startup["embedded"].append(first_trial("local", local_env))
        startup["gateway_new"].append(first_trial("gateway", keep))  # made, and left running
        startup["gateway_reused"].append(first_trial("gateway", keep))  # the one left running
        stop_all_clusters(close)

    os.environ.update(close)
    dask.config.refresh()  # dask read the environment when it was imported, before these were set
    import jupyter_dist  # after the refresh, as a kernel started with these settings would

    gateway_client = jupyter_dist.get_client("gateway")
    gateway_client.wait_for_workers(WORKERS, timeout=120)
    direct_client = Client(direct, set_as_default=False)
    direct_client.wait_for_workers(WORKERS, timeout=60)
    bench_streaming.channel(direct_client), bench_streaming.channel(gateway_client)  # warm-up
    runs: dict[str, list[dict]] = {"direct": [], "gateway": []}
    for _ in range(2):  # interleaved
        runs["direct"].append(bench_streaming.channel(direct_client))
        runs["gateway"].append(bench_streaming.channel(gateway_client))
    direct_client.close()
    jupyter_dist.cluster.forget_cluster("gateway")
    channel = {side: _runner.medians(rs) for side, rs in runs.items()}
    first = {side: median(values) for side, values in startup.items()}
    via, bypass = channel["gateway"], channel["direct"]
    result.update(
        first_trial_running_s={"median": first, "all": startup},
        channel={"median": channel, "all": runs},
        ratios={
            "gateway_new_vs_embedded": first["gateway_new"] / first["embedded"],
            "gateway_reused_vs_embedded": first["gateway_reused"] / first["embedded"],
            "dispatch_gateway_vs_direct": via["dispatch_trials_per_s"] / bypass["dispatch_trials_per_s"],
            "stream_p50_gateway_vs_direct": via["stream_p50_s"] / bypass["stream_p50_s"],
        },
    )


if __name__ == "__main__":
    _runner.main("gateway", main)
