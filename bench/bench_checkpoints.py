"""Checkpoints: the steps a trial redoes when its worker is killed at step 40 of 50, with ``checkpoint()`` every
5 steps against none, and what one save costs (size, MB/s, share of a step). No target. Method:
docs/performance/checkpoints.md. Run: ``.venv/bin/python bench/bench_checkpoints.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import _runner
from _runner import interleave, local_cluster, measuring
from _workloads import die_once

STEPS = 50
DIE_AT = 40
EVERY = 5
WIDTH = 1024
ROUNDS = 3


# --- run on the workers (defined here so cloudpickle ships them by value) ----------------------------------
def train(steps=STEPS, die_at=None, marker="", every=EVERY, width=WIDTH):
    import time
    from pathlib import Path

    import torch

    import jupyter_dist as jd

    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, width), nn.ReLU(), nn.Linear(width, width), nn.Linear(width, 10))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, 512), torch.randint(0, 10, (256,))
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if every and (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    saves, steps_s = [], []
    for step in range(start, steps):
        began = time.perf_counter()
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimiser.step()
        steps_s.append(time.perf_counter() - began)
        jd.report(step=step, loss=float(loss))
        if every and step % every == 0:
            began = time.perf_counter()
            folder = jd.checkpoint(step, state)
            saves.append(time.perf_counter() - began)
        if step == die_at:  # the worker dies once; its nanny restarts it, Dask re-runs the trial
            die_once(marker, settle=0.3)
    size = sum(f.stat().st_size for f in Path(folder).iterdir()) if saves else 0
    jd.report(  # the figures, as one more report after the last step
        step=steps,
        save_s=sorted(saves)[len(saves) // 2] if saves else 0.0,
        step_s=sorted(steps_s)[len(steps_s) // 2],
        checkpoint_mb=size / 1e6,
    )
    return float(loss)


def one_trial(client, params: dict, root: Path):
    """``train`` as a 1-trial experiment on ``client``, checkpointing under ``root``: its record."""
    search = {"metric": "loss", "mode": "min", "sampler": "tpe", "store": False}
    exp, _ = _runner.hpo(train, params, client, trials=1, checkpoint_dir=root / "checkpoints", **search)
    return exp, exp.trial_records()[0]


def killed_run(client, checkpoints: bool, root: Path) -> dict:
    marker = tempfile.mkdtemp(dir=root) + "/died"
    params = {"die_at": DIE_AT, "marker": marker, "every": EVERY if checkpoints else 0}
    (exp, rec), wall = _runner.timed(one_trial, client, params, root)
    assert rec.state == "completed" and rec.attempts == 2, rec
    client.wait_for_workers(2, timeout=60)
    steps = exp.history.query("metric == 'loss'")  # one per step executed, both attempts
    return {"steps_executed": len(steps), "wall_s": wall, "resumed_from": rec.resumed_from}


def save_cost(client, every: int, root: Path) -> dict:
    _, rec = one_trial(client, {"every": every}, root)
    got = rec.last  # the figures it reported last
    return {
        "every": every,
        "save_s": got["save_s"],
        "step_s": got["step_s"],
        "checkpoint_mb": got["checkpoint_mb"],
        "mb_per_s": got["checkpoint_mb"] / got["save_s"],
        "share_of_step_time": got["save_s"] / every / got["step_s"],
    }


def main() -> dict:
    parameters = {
        "trial": f"{STEPS} steps of an MLP 512-{WIDTH}-{WIDTH}-10, Adam, batch 256; killed at step {DIE_AT}",
        "checkpoint_every": EVERY,
        "rounds": ROUNDS,
        "cluster": "embedded LocalCluster, 2 workers x 1 thread",
    }
    root = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    with (
        measuring("checkpoints", parameters, wall=False, note=True) as result,
        local_cluster(timeout=None) as client,
    ):
        save_cost(client, 10, root)  # warm-up: imports, first save
        sides = {
            "with": lambda r: killed_run(client, True, root),
            "without": lambda r: killed_run(client, False, root),
        }
        runs = interleave(ROUNDS, sides)
        costs = [save_cost(client, every, root) for every in (1, 10)]
        medians = {side: _runner.medians(rs, ("steps_executed", "wall_s")) for side, rs in runs.items()}
        result.update(
            median=medians,
            all=runs,
            save_cost=costs,
            ratios={
                "steps_with_vs_without": medians["with"]["steps_executed"]
                / medians["without"]["steps_executed"],
                "wall_with_vs_without": medians["with"]["wall_s"] / medians["without"]["wall_s"],
            },
        )
    return result


if __name__ == "__main__":
    _runner.main("checkpoints", main, quick={"ROUNDS": 1})
