"""A kernel SIGKILLed mid-experiment: what finished is in the store, and the run shows as interrupted."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import jupyter_dist as jd
from jupyter_dist.store import FLUSH_INTERVAL_S


def slow(x=0.0):
    import time

    import jupyter_dist as jd

    for step in range(4):
        time.sleep(0.1)
        jd.report(step=step, y=x + step)
    return {"y": x + 4}


SCRIPT = """
import sys, time
import jupyter_dist as jd
from jupyter_dist import space


def slow(x=0.0):
    for step in range(4):
        time.sleep(0.1)
        jd.report(step=step, y=x + step)
    return {"y": x + 4}


if __name__ == "__main__":
    jd.hpo(slow, {"x": space.uniform(0, 1)}, trials=200, metric="y", sampler="random", pruner=None,
           progress=False, store=sys.argv[1], name="doomed")
"""


def _completed(path: str) -> int:
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT count(*) FROM trials WHERE state = 'completed'").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_a_killed_kernel_keeps_its_finished_trials_reads_as_interrupted_and_resumes(tmp_path, run_hpo):
    store = str(tmp_path / "store.sqlite")
    script = tmp_path / "kernel.py"
    script.write_text(SCRIPT)
    # A session of its own: the kill takes the "kernel" and the workers it spawned, as a crashed kernel's would go.
    kernel = subprocess.Popen([sys.executable, str(script), store], cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _completed(store) < 4 and time.monotonic() < deadline and kernel.poll() is None:
            time.sleep(0.2)
        assert _completed(store) >= 4, "the run never got going"
        time.sleep(2 * FLUSH_INTERVAL_S)  # what finished by now must survive the kill
        finished_before_kill = _completed(store)
    finally:
        os.killpg(kernel.pid, signal.SIGKILL)
        kernel.wait(30)

    listing = jd.experiments(store=store).set_index("name")
    assert listing.loc["doomed", "state"] == "interrupted"
    assert listing.loc["doomed", "trials_done"] >= finished_before_kill

    exp = jd.load("doomed", store=store)
    assert exp.state == "interrupted"
    completed = exp.trials[exp.trials.state == "completed"]
    assert len(completed) >= finished_before_kill
    assert set(exp.trials.state) <= {"completed", "interrupted"}
    history = exp.history
    for trial_id in completed.trial_id:  # every finished trial's reports are there, whole
        assert list(history[history.trial_id == trial_id].step) == [0, 1, 2, 3]
    assert exp.best.value == completed.value.max()

    # A new kernel resumes it: what finished is kept, what was running runs again, and it ends at the total.
    interrupted = exp.trials[exp.trials.state == "interrupted"]
    total = len(completed) + len(interrupted) + 3
    resumed = run_hpo(
        slow,
        {"x": jd.space.uniform(0, 1)},
        trials=total,
        metric="y",
        pruner=None,
        store=store,
        name="doomed",
        resume=True,
    )
    assert resumed.state == "completed" and resumed.id == exp.id
    trials = resumed.trials
    assert (trials.state == "completed").sum() == total
    assert trials.head(len(exp.trials))[["trial_id", "state", "value"]].equals(
        exp.trials[["trial_id", "state", "value"]]
    )
    rerun = trials[trials.trial_id > exp.trials.trial_id.max()]
    assert set(interrupted.params_x) <= set(rerun.params_x)  # the interrupted ones ran again, first
    assert jd.experiments(store=store).set_index("name").loc["doomed", "state"] == "completed"
