"""What sending every run to a tracker costs: bench_store's workloads with MLflow (a real ``mlflow server``) and
TensorBoard against none, interleaved. Target: <= 5% of either. Method: docs/performance/streaming.md,
"Experiment trackers". Run: ``.venv/bin/python bench/bench_tracking.py [--rounds 3]``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import _runner
import bench_dispatch
import bench_streaming
import dask.config
from _common import free_port, median, wait_http
from _runner import interleave, local_cluster, measuring

N = bench_dispatch.N
STREAM_S = 10.0
TIGHT = 0.0  # bench_streaming's rate for "as fast as report() lets it"
TARGET_COST = 0.05
SIDES = ("none", "mlflow", "tensorboard")


class Server:
    """``mlflow server`` in its own session (it runs uvicorn and a job runner as children), stopped as a group."""

    def __init__(self, folder: str) -> None:
        self.uri = f"http://127.0.0.1:{free_port()}"
        port = self.uri.rsplit(":", 1)[1]
        mlflow = os.path.join(os.path.dirname(sys.executable), "mlflow")
        # At the lowest priority: a tracking server runs on a machine of its own, and the cost measured here is
        # the callback's, in the kernel, not the server's CPU on the same two cores as the trials. (At normal
        # priority, 3 rounds: MLflow cost the tight streaming loop 6.4% of its reports/s; see the docs.)
        args = ["nice", "-n", "19", mlflow, "server", "--host", "127.0.0.1", "--port", port, "--workers", "1"]
        args += [
            "--backend-store-uri",
            f"sqlite:///{folder}/mlflow.db",
            "--artifacts-destination",
            f"{folder}/a",
        ]
        self.log = open(os.path.join(folder, "server.log"), "w")  # closed in stop()
        self.process = subprocess.Popen(
            args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:  # polled every 0.25 s for up to 2 minutes
            wait_http(f"{self.uri}/health", 120, self.process, every=0.25)
        except OSError:
            self.stop()
            raise RuntimeError("mlflow server did not start") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def _setting(side: str, server: Server, folder: str, name: str) -> dict:
    if side == "mlflow":
        return {"jupyter_dist.tracking.mlflow": {"tracking-uri": server.uri, "experiment": name}}
    if side == "tensorboard":
        return {"jupyter_dist.tracking.tensorboard": {"log-dir": os.path.join(folder, name)}}
    return {}


def _export_done(side: str) -> float | None:
    """Seconds until the run's export is all written (None: no tracker, or not within 10 minutes: its warning is
    kept)."""
    if side == "none":
        return None
    from jupyter_dist.integrations import MLflow, TensorBoard

    t0 = time.perf_counter()
    complete = (MLflow if side == "mlflow" else TensorBoard).wait(timeout=600)
    return time.perf_counter() - t0 if complete else None


def _med_done(runs: list[dict], key: str) -> float | None:
    """The median of how long the exports took after their runs; None if one was not done within 10 minutes."""
    values = [run[key] for run in runs]
    return None if None in values else round(median(values), 1)


def _sent(side: str, server: Server, folder: str, name: str) -> dict:
    """What reached the tracker: MLflow's runs (parent included), the finished ones, and each trial's last step of
    ``v`` (the streaming trials'); TensorBoard's run folders."""
    if side == "mlflow":
        from mlflow import MlflowClient

        client = MlflowClient(server.uri)
        found = client.get_experiment_by_name(name)
        if found is None:
            return {"runs": 0, "points": 0}
        runs = client.search_runs([found.experiment_id], max_results=5000)
        # reading every point back (get_metric_history) would take minutes: the runs, their final state, and the
        # last value of v (a streaming trial reports v = step, so its last step is there)
        last = sorted(int(r.data.metrics["v"]) for r in runs if "v" in r.data.metrics)
        return {"runs": len(runs), "finished": sum(r.info.status == "FINISHED" for r in runs), "last_v": last}
    if side == "tensorboard":
        root = os.path.join(folder, name)
        return {"run_folders": sum(len(os.listdir(os.path.join(root, d))) for d in os.listdir(root))}
    return {}


def run_side(client, side: str, server: Server, folder: str, round_no: int) -> dict:
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name = f"dispatch-{side}-{round_no}"
        with dask.config.set(_setting(side, server, folder, name)):
            out["dispatch_s"] = bench_dispatch.run_ours(client, N)[0]
        out["dispatch_export_done_after_s"] = _export_done(side)
        out["dispatch_trials_per_s"] = N / out["dispatch_s"]
        out["dispatch_sent"] = _sent(side, server, folder, name)
        name = f"streaming-{side}-{round_no}"
        with dask.config.set(_setting(side, server, folder, name)):
            streaming = bench_streaming.run_ours(client, STREAM_S, TIGHT)
        out["streaming_export_done_after_s"] = _export_done(side)
        out.update(
            streaming_wall_s=streaming["hpo_wall_s"],
            streaming_delivered_per_s=streaming["delivered_per_s"],
            streaming_sent=streaming["sent"],
            streaming_p50_s=streaming["latency_s"]["p50"],
        )
        out["streaming_sent_to_tracker"] = _sent(side, server, folder, name)
    out["warnings"] = [str(w.message) for w in caught if "jupyter_dist:" in str(w.message)]
    return out


def main(rounds: int) -> dict:
    parameters = {
        "rounds": rounds,
        "dispatch": f"{N} no-op trials, random sampler, once per side per round",
        "streaming": f"{bench_streaming.TRIALS} trials x {STREAM_S:.0f} s of report() in a tight loop, live "
        "view listener",
        "mlflow": "dask config jupyter_dist.tracking.mlflow: a local `mlflow server` (SQLite, 1 worker)",
        "export": "hpo() returns without waiting for the export; the script then waits for it (not in the wall)",
        "tensorboard": "dask config jupyter_dist.tracking.tensorboard: a temporary folder",
        "none": "no tracker",
    }
    with measuring("tracking", parameters) as result:
        with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-tracking-") as folder:
            server = Server(folder)
            try:
                with local_cluster(timeout=None) as client:
                    bench_dispatch.run_ours(client, bench_dispatch.WARMUP)
                    sides = {side: lambda r, s=side: run_side(client, s, server, folder, r) for side in SIDES}
                    runs = interleave(rounds, sides, order="alternate")
            finally:
                server.stop()

        def med(side: str, key: str) -> float:
            return median([run[key] for run in runs[side]])

        cost = {
            side: {
                "dispatch": med(side, "dispatch_s") / med("none", "dispatch_s") - 1,
                "streaming_wall": med(side, "streaming_wall_s") / med("none", "streaming_wall_s") - 1,
                "streaming_delivered": 1
                - med(side, "streaming_delivered_per_s") / med("none", "streaming_delivered_per_s"),
            }
            for side in SIDES[1:]
        }
        result.update(
            runs=runs,
            median={
                key: {side: med(side, key) for side in SIDES}
                for key in ("dispatch_s", "streaming_wall_s", "streaming_delivered_per_s", "streaming_p50_s")
            },
            export_done_after_s={
                key: {side: _med_done(runs[side], key) for side in SIDES[1:]}
                for key in ("dispatch_export_done_after_s", "streaming_export_done_after_s")
            },
            cost_of_the_tracker=cost,
            target={"cost_at_most": TARGET_COST},
            met={
                f"{side}_{what}": value <= TARGET_COST for side in cost for what, value in cost[side].items()
            },
        )
    return result


if __name__ == "__main__":
    _runner.main("tracking", main, {"rounds": 3}, quick={"N": 100, "STREAM_S": 2.0})
