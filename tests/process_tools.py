"""Stopping a process a test started, by its PID: asked to end, then killed if it does not within the grace."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen, grace: float = 30) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
