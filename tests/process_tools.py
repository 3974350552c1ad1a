"""Stopping a process a test (or a benchmark) started, by its PID: asked to end, then killed if it does not within
the grace."""

from __future__ import annotations

import subprocess
import time


def stop(process: subprocess.Popen, grace: float = 30) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_jupyter_server(server: subprocess.Popen, grace: float = 20) -> None:
    """Stop a Jupyter server this process started. Its stop ends with the interpreter's exit, which can wait
    forever on an idle AnyIO worker thread of its contents manager (not a daemon thread): once it has no process
    left under it (its kernels, and their clusters, ended), what is left of it is that wait, and it is killed."""
    import psutil

    if server.poll() is not None:
        return
    tree = psutil.Process(server.pid)  # still ours: not reaped, so its PID is not reused
    server.terminate()
    deadline = time.monotonic() + grace
    while server.poll() is None and time.monotonic() < deadline:
        try:
            if not tree.children(recursive=True):
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    stop(server, grace=0.5)
