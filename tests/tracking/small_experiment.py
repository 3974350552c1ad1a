"""The small experiment the tracking tests export: trials that complete, fail and are pruned, printing as they go.

A module of its own, not conftest.py: the workers import the training function by its module's name, and in a
whole test session "conftest" is whichever test folder's came first on their path.
"""

from __future__ import annotations

import time

import jupyter_dist as jd
from jupyter_dist import space

# One value of "kind" per trial (a grid): two complete, "best" with the highest acc, one fails, one is pruned.
KINDS = ["ok", "best", "fails", "pruned"]
STEPS = 4


def train(kind="ok", steps=STEPS):
    print(f"training {kind}")
    if (
        kind == "pruned"
    ):  # below the pruner's threshold from its first report: reports until it is told to stop
        for step in range(100):
            jd.report(step=step, acc=0.0, loss=1.0)
            time.sleep(0.05)
    for step in range(steps):
        scale = 1.0 if kind == "best" else 0.5
        jd.report(step=step, acc=scale * (step + 1) / steps, loss=1.0 / (step + 1))
        if step == 1 and kind == "fails":
            raise RuntimeError("diverged")


SPACE = {"kind": space.choice(KINDS)}
