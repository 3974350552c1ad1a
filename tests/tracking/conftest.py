"""A real MLflow tracking server (``mlflow server``, SQLite backend, artifacts served by it) and the fixture that runs
the small experiment (small_experiment.py) the tracking tests export."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pytest
from small_experiment import KINDS, SPACE, train


@pytest.fixture
def run_small(run_hpo):
    """The small experiment: hpo(train, SPACE) over the grid, two at a time; only "pruned" is below the
    pruner's threshold."""

    def run(**kwargs):
        pruner = optuna.pruners.ThresholdPruner(lower=0.1)
        return run_hpo(
            train, SPACE, trials=len(KINDS), metric="acc", sampler="grid", pruner=pruner, parallel=2, **kwargs
        )

    return run


class MlflowServer:
    def __init__(self, folder: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log = open(folder / "server.log", "w")  # closed in stop()
        # Its own session: `mlflow server` runs uvicorn and a job runner as children, stopped with it as a group.
        self.process = subprocess.Popen(
            [
                os.path.join(os.path.dirname(sys.executable), "mlflow"),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{folder / 'mlflow.db'}",
                "--artifacts-destination",
                str(folder / "artifacts"),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = (folder / "server.log").read_text()
                    raise RuntimeError(f"mlflow server did not start: {log}") from None
                time.sleep(0.25)

    def kill(self) -> None:
        """Gone at once, as a crashed server: its process group (the server's PID) killed."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"))
    yield server
    server.stop()


@pytest.fixture
def own_mlflow_server(tmp_path):
    """A server of the test's own, for a test that kills it."""
    server = MlflowServer(tmp_path)
    yield server
    server.stop()
