"""What a lost worker costs an elastic 3-rank data-parallel job (``min_workers=2``) against running it again by
hand (from its checkpoint, from zero): time lost, recovery, steps redone. Target: elastic loses less than by hand.
Method: docs/performance/elastic.md. Run: ``.venv/bin/python bench/bench_elastic.py`` (``--quick``: k=5, once).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import _runner
from _common import DaskProcessCluster, median
from _runner import measuring
from _workloads import die_once

STEPS = 120
KILL_AT = 57  # mid-interval for both k: k=5 redoes 2 steps (checkpoint 55), k=20 redoes 17 (checkpoint 40)
EVERY = (5, 20)
REPEATS = 3
WORKERS = 3


def train(every=5, kill_once=None, steps=STEPS, kill_at=KILL_AT):
    """Runs on the ranks (shipped by value: this script is __main__)."""
    import time

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import jupyter_dist as jd

    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(4096, 32, generator=data), torch.randn(4096, 1, generator=data)
    model = jd.prepare(
        torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    )
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = jd.prepare(DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True))
    state = {"model": model, "optimiser": optimiser}
    step, epoch = 0, 0
    if (restored := jd.restore(state)) is not None:
        step, epoch = restored.step + 1, restored.state["epoch"]
    while step < steps:
        for xb, yb in loader:
            optimiser.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimiser.step()
            time.sleep(0.02)  # the rest of a real step (a bigger model, a data pipeline)
            jd.report(step=step, world=jd.world_size())
            if step == kill_at and kill_once and jd.world_size() == WORKERS and jd.rank() == WORKERS - 1:
                die_once(kill_once)
            if step % every == 0:
                jd.checkpoint(step, {**state, "epoch": epoch})
            step += 1
            if step >= steps:
                break
        epoch += 1
    return step


def warm_imports() -> bool:
    """Import what ``train`` needs, on each worker (a new one too), before any job is timed."""
    import torch  # noqa: F401
    import torch.distributed  # noqa: F401
    import torch.utils.data  # noqa: F401

    import jupyter_dist  # noqa: F401

    return True


class Cluster(DaskProcessCluster):
    """A `dask scheduler` and one-thread `dask worker --no-nanny` processes on 127.0.0.1, started (and stopped,
    by PID) here; a worker killed stays gone until ``refill()`` starts another."""

    def __init__(self) -> None:
        super().__init__(WORKERS, 1, scheduler_args=("--dashboard-address", ":0"), worker_args=())
        self.refill()

    def refill(self) -> None:
        import jupyter_dist as jd

        self.spawn(WORKERS - sum(p.poll() is None for p in self.procs[1:]))
        deadline = time.monotonic() + 60
        while True:  # the scheduler may not listen yet, nor have dropped the killed worker
            try:
                client = jd.get_client(self.address)
                client.wait_for_workers(WORKERS, timeout=60)
                if len(client.scheduler_info(n_workers=-1)["workers"]) == WORKERS:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{WORKERS} workers were not up within 60 s")
            time.sleep(0.5)
        # A new worker's rank would otherwise import torch inside the next job's wall time.
        client.run(warm_imports)

    def close(self) -> None:
        from jupyter_dist.cluster import forget_cluster

        forget_cluster(self.address)
        super().close()


def back_where_it_was(before, after) -> dict:
    """``before``: the reports up to the kill; ``after``: the reports of what went on. The step reached; the
    seconds from its last report before the kill until the first report of the new group (recovery: noticing,
    restarting, the function's start, its restore); and until a report of the step reached (or a later one)
    again (time lost: the recovery and the steps redone)."""
    reached = int(before.step.max())
    last = before.time.max()
    again = after[after.step >= reached].time.min()
    return {
        "reached": reached,
        "recovery_s": (after.time.min() - last).total_seconds(),
        "lost_s": (again - last).total_seconds(),
    }


def run_once(jd, cluster: Cluster, way: str, every: int, root: Path) -> dict:
    folder = Path(tempfile.mkdtemp(dir=root))
    common = dict(cluster=cluster.address, progress=False, every=every, store=str(folder / "store.db"))
    kill = str(folder / "killed")
    t0 = time.perf_counter()
    if way == "baseline":
        jd.data_parallel(train, workers=WORKERS, checkpoint_dir=folder / "ckpt", **common)
        out = {"steps_redone": 0}
    elif way == "elastic":
        exp = jd.data_parallel(
            train, workers=WORKERS, min_workers=2, checkpoint_dir=folder / "ckpt", kill_once=kill, **common
        )
        (restart,) = exp.restarts.to_dict("records")
        history = exp.history[exp.history.metric == "world"]
        out = {"steps_redone": int(restart["steps_redone"])}
        out |= back_where_it_was(history[history.attempt == 0], history[history.attempt == 1])
        # of the recovery, the part until the kernel decided to go on (its record of the restart, UTC)
        out["noticed_s"] = (restart["at"] - history[history.attempt == 0].time.max()).total_seconds()
    else:
        first = dict(workers=WORKERS, name="job", checkpoint_dir=folder / "ckpt", kill_once=kill, **common)
        try:
            jd.data_parallel(train, **first)
            raise RuntimeError("the job was to lose a worker")
        except jd.ExperimentFailed as failed:
            failed_at = time.time()  # the moment a user's cell would have stopped
            before = failed.experiment.history
        if way == "by_hand_checkpoint":
            after = jd.data_parallel(train, **{**first, "workers": 2, "resume": True}).history
            after = after[after.attempt == after.attempt.max()]
        else:
            again = dict(first, workers=2, name="again", checkpoint_dir=folder / "fresh")
            after = jd.data_parallel(train, **again).history
        out = back_where_it_was(before, after)
        out["noticed_s"] = failed_at - before.time.max().timestamp()
        checkpoint = (out["reached"] // every) * every if way == "by_hand_checkpoint" else -1
        out["steps_redone"] = out["reached"] - checkpoint
    out["wall_s"] = time.perf_counter() - t0
    if way != "baseline":
        cluster.refill()
    return out


WAYS = ("baseline", "elastic", "by_hand_checkpoint", "by_hand_zero")


def _summary(runs: dict[str, list[dict]]) -> dict:
    """One k's figures: per way its walls and the medians (and maxima) of what a lost worker cost."""
    out = {}
    for way, done in runs.items():
        walls = [r["wall_s"] for r in done]
        out[way] = {
            "wall_s_median": median(walls),
            "wall_s_min": min(walls),
            "wall_s_max": max(walls),
            "steps_redone_median": median([r["steps_redone"] for r in done]),
            "runs": done,
        }
        if way != "baseline":
            for key in ("lost_s", "recovery_s", "noticed_s"):
                out[way][f"{key}_median"] = median([r[key] for r in done])
                out[way][f"{key}_max"] = max(r[key] for r in done)
    elastic = out["elastic"]
    for way in ("by_hand_checkpoint", "by_hand_zero"):
        out[f"lost_ratio_{way}_over_elastic"] = out[way]["lost_s_median"] / elastic["lost_s_median"]
    recovery = out["by_hand_checkpoint"]["recovery_s_median"] / elastic["recovery_s_median"]
    out["recovery_ratio_by_hand_checkpoint_over_elastic"] = recovery
    return out


def main() -> dict:
    import jupyter_dist as jd

    parameters = _runner.constants("STEPS", "KILL_AT", "EVERY", "REPEATS", "WORKERS")
    with measuring("elastic", parameters, wall=False) as result:
        cluster = Cluster()
        # warm-up: imports, first task
        run_once(jd, cluster, "baseline", EVERY[0], Path(tempfile.gettempdir()))
        runs: dict[str, dict[str, list[dict]]] = {str(k): {way: [] for way in WAYS} for k in EVERY}
        try:
            with tempfile.TemporaryDirectory() as root:
                for repeat in range(REPEATS):
                    for k in EVERY:
                        for way in WAYS:  # side by side in each repeat: the machine's drift hits all alike
                            run = run_once(jd, cluster, way, k, Path(root))
                            runs[str(k)][way].append(run)
                            print(f"k={k} #{repeat} {way}: {run}", flush=True)
        finally:
            cluster.close()
    by_k = {k: _summary(ways) for k, ways in runs.items()}
    result.update(
        every=by_k,
        target="a lost worker costs the elastic job less time than restarting by hand from the same checkpoint",
        met=all(
            s["elastic"]["lost_s_median"] < s["by_hand_checkpoint"]["lost_s_median"] for s in by_k.values()
        ),
    )
    return result


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    _runner.main("elastic", main, quick={"EVERY": (5,), "REPEATS": 1})
