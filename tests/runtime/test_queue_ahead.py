"""Brief trials on a real cluster: one trial per worker waits behind the running one (trials/_loop.py
BRIEF_TRIAL), yet no worker ever runs two at once and every trial is recorded once, whole."""

from __future__ import annotations

from jupyter_dist import space
from jupyter_dist.trials._launcher import DaskLauncher


def brief(x):
    import time

    import jupyter_dist

    for step in range(3):
        time.sleep(0.05)
        jupyter_dist.report(step=step, x=x)
    return x


def test_brief_trials_wait_on_every_worker_and_never_run_more_than_parallel(run_hpo, monkeypatch):
    placed: list[tuple[int, list[str] | None]] = []
    place = DaskLauncher.place

    def spy(self, trial_id, behind=0):
        where = place(self, trial_id, behind)
        placed.append((behind, where))
        return where

    monkeypatch.setattr(DaskLauncher, "place", spy)
    exp = run_hpo(
        brief, {"x": space.uniform(0, 1)}, trials=16, metric="x", mode="max", pruner=None, parallel=2
    )
    counts = exp.counts()
    assert counts["completed"] == 16 and counts["queued"] == 0
    assert (exp.history.groupby("trial_id").size() == 3).all()  # every report of every trial, once
    queued_on = {where[0] for behind, where in placed if behind and where}
    assert len(queued_on) == 2  # both workers had a trial waiting behind the running one
    # From the workers' own start and end times: at most 2 trials ran at any moment.
    records = exp.trial_records()
    edges = sorted([(r.started + r.duration, -1) for r in records] + [(r.started, 1) for r in records])
    running = most = 0
    for _, change in edges:
        running += change
        most = max(most, running)
    assert most == 2
