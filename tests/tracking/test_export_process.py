"""The export process on its own: at the kernel's exit it is given ``timeout`` to write what was queued, and when
the kernel dies it ends by itself (after at most ``timeout``), even with a server that never answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

# A kernel, as far as the export is concerned: an Exporter fed a small experiment's events by hand.
KERNEL = """
import os, sys, time
from jupyter_dist.tracking._export_process import Exporter
from jupyter_dist.tracking import (
    ExperimentInfo, ExperimentStarted, Reported, TrialEnded, TrialInfo, TrialStarted)

destination, kwargs, timeout, then = sys.argv[1], eval(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
exporter = Exporter((destination, kwargs), "the tracker", "exp", object, timeout)
t0 = time.time()
exporter.put(ExperimentStarted(ExperimentInfo("id", "exp", "hpo", ("v",), ("max",), t0)))
exporter.put(TrialStarted(TrialInfo(0, {"x": 1.5}, {}, t0)))
exporter.put(Reported(0, [[s, {"v": float(s)}, t0 + s / 1000] for s in range(500)]))
ended = TrialInfo(0, {"x": 1.5}, {}, t0, state="completed", value=499.0, duration=0.5, steps=500, last={"v": 499.0})
exporter.put(TrialEnded(ended))
while exporter._process is None:
    time.sleep(0.01)
print(exporter._process.pid, flush=True)
if then == "die":
    os.kill(os.getpid(), 9)
# else: exit at once, the events still queued in this process
"""


def kernel(
    tmp_path, destination: str, kwargs: dict, timeout: float, then: str
) -> subprocess.CompletedProcess:
    script = tmp_path / "kernel.py"
    script.write_text(textwrap.dedent(KERNEL))
    args = [sys.executable, str(script), destination, repr(kwargs), str(timeout), then]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie: ended, not yet reaped
    except FileNotFoundError:
        return True


def test_what_is_queued_at_the_kernels_exit_is_written_before_it_exits(tmp_path):
    done = kernel(
        tmp_path,
        "jupyter_dist.tracking.tensorboard:TensorBoardDestination",
        {"log_dir": str(tmp_path)},
        60,
        "exit",
    )
    assert done.returncode == 0, done.stderr
    assert gone(int(done.stdout.split()[0]))
    acc = EventAccumulator(str(tmp_path / "exp" / "trial-0"), size_guidance={"scalars": 0}).Reload()
    assert [e.step for e in acc.Scalars("v")] == list(range(500))
    assert acc.Scalars("jupyter_dist/value")[0].value == 499.0


def test_the_export_process_ends_soon_after_the_kernel_dies_even_with_a_server_that_never_answers(tmp_path):
    with socket.socket() as s:  # nobody listens: MLflow's client would retry for minutes
        s.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{s.getsockname()[1]}"
    kwargs = {"tracking_uri": uri, "experiment": "orphan"}
    died = kernel(tmp_path, "jupyter_dist.tracking.mlflow:MlflowDestination", kwargs, 2, "die")
    assert died.returncode == -9
    pid = int(died.stdout.split()[0])
    deadline = time.monotonic() + 30
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    ended = gone(pid)
    if not ended:
        os.kill(pid, 9)
    assert ended, f"the export process {pid} outlived its kernel by 30 s"
