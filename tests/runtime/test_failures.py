"""Stopping and worker loss, on the real LocalCluster."""

import _thread
import os
import threading
import time

from tickets import ticket

import jupyter_dist as jd
from jupyter_dist import space


def dies_once(x=0.0, marker=""):
    for step in range(3):
        jd.report(step=step, v=x + step)
    try:
        os.mkdir(marker)
        time.sleep(0.3)  # let the reports leave the worker, as in a crash some time into training
        os._exit(1)  # the first attempt kills its worker process mid-trial; the nanny restarts it
    except FileExistsError:
        pass
    return x


def test_a_trial_whose_worker_dies_is_rerun_and_its_attempts_told_apart(client, tmp_path, run_hpo):
    exp = run_hpo(
        dies_once,
        {"x": 1.0, "marker": str(tmp_path / "died")},
        trials=1,
        metric="v",
    )
    t = exp.trials.iloc[0]
    assert t.state == "completed" and t.value == 1.0
    assert t.attempts == 2
    h = exp.history
    assert sorted(h.attempt.unique()) == [0, 1]
    assert len(h[h.attempt == 1]) == 3
    client.wait_for_workers(2, timeout=60)


def lost_then_raises_then_completes(x=0.0, folder=""):
    attempt = ticket(folder)
    if attempt == 0:
        os._exit(1)  # its worker dies (killed, out of memory, preempted): Dask runs it again
    if attempt == 1:
        raise ConnectionError("flaky read")  # the trial's own failure: max_failures=1 runs it again
    return x


def test_a_lost_worker_does_not_spend_max_failures(client, tmp_path, run_hpo):
    folder = tmp_path / "attempts"
    folder.mkdir()
    exp = run_hpo(
        lost_then_raises_then_completes,
        {"x": 1.0, "folder": str(folder)},
        trials=1,
        metric="v",
        max_failures=1,
    )
    t = exp.trials.iloc[0]
    # Three attempts ran (the first reported nothing before its worker died, so the kernel never heard of it):
    # the raise after the lost worker was still retried, max_failures=1 untouched by the loss.
    assert sorted(os.listdir(folder)) == ["0", "1", "2"]
    assert t.state == "completed" and t.value == 1.0 and t.error is None
    client.wait_for_workers(2, timeout=60)


def slow_steps(x=0.0, steps=100):
    for step in range(steps):
        time.sleep(0.05)
        jd.report(step=step, v=x)
    return x


def two_short_then_long(x=0.0, folder=""):
    return slow_steps(x, steps=2 if ticket(folder) < 2 else 200)


def _capture_experiment(exp_holder):
    def view(exp):
        exp_holder.append(exp)

        class Watch:
            def start(self):
                pass

            def idle(self):
                pass

            def finish(self):
                pass

        return Watch()

    return view


def test_stop_keeps_finished_trials_and_stops_running_ones(client, tmp_path):
    holder = []

    def stop_after_two():
        # once two have finished and a long one has started (else there would be nothing to stop)
        while not holder or holder[0].counts()["completed"] < 2 or not holder[0].counts()["running"]:
            time.sleep(0.02)
        holder[0].stop()

    threading.Thread(target=stop_after_two, daemon=True).start()
    exp = jd.hpo(
        two_short_then_long,
        {"x": space.uniform(0, 1), "folder": str(tmp_path)},
        trials=20,
        metric="v",
        sampler="random",
        # No pruner: ASHA would prune a long trial at its first rung (against the two short ones' steps) before
        # the stop reaches it, and a pruned trial is not the stopped one this test is about.
        pruner=None,
        cluster=client,
        progress=_capture_experiment(holder),
    )
    assert exp.state == "stopped"
    c = exp.counts()
    assert c["completed"] >= 2 and c["stopped"] >= 1 and c["running"] == 0
    stopped = exp.trials[exp.trials.state == "stopped"]
    assert (stopped.steps < 200).all()  # long trials (200 x 50 ms) were cut short
    assert len(exp.trials) < 20  # no new trial started after the stop


def returns_a_tensor_once_told_to_stop(reporter, x=0.0):
    import torch

    while not reporter.should_stop:
        time.sleep(0.02)
    print("saw the stop")
    return {"v": torch.tensor(0.5)}


def test_a_trial_returning_a_tensor_after_the_stop_loses_none_of_its_messages(run_hpo):
    exp = run_hpo(
        returns_a_tensor_once_told_to_stop, {"x": space.uniform(0, 1)}, trials=1, metric="v", timeout=1
    )
    assert exp.trials.state.tolist() == ["stopped"]
    assert "saw the stop" in exp.logs(0)


def test_ctrl_c_stops_gracefully(client):
    holder = []

    def interrupt_when_running():
        while not holder or sum(bool(r.curve_values) for r in holder[0].trial_records()) < 2:
            time.sleep(0.02)
        _thread.interrupt_main()  # what the kernel's interrupt (Ctrl-C, the stop square) does

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    exp = jd.hpo(
        slow_steps,
        {"x": space.uniform(0, 1)},
        trials=10,
        metric="v",
        sampler="random",
        pruner=None,  # the trials end completed or stopped, none pruned by ASHA on the way
        cluster=client,
        progress=_capture_experiment(holder),
    )
    assert exp.state == "stopped"
    assert set(exp.trials.state) <= {"completed", "stopped"}
    assert (exp.trials.steps < 100).all()


def kills_its_worker(x=0.0):
    if x == 0.5:
        os._exit(1)  # every attempt: a poison trial
    jd.report(step=0, v=x)
    return x


def test_a_trial_that_kills_every_worker_it_lands_on_fails_clearly_and_the_rest_go_on(client, run_hpo):
    # Its retries can find both workers restarting at once: Dask then parks it as "no-worker" for good unless
    # the launcher re-submits it unpinned (trials/_launcher.py, _unpin_orphans).
    exp = run_hpo(
        kills_its_worker, {"x": space.choice([0.1, 0.5, 0.9])}, trials=3, metric="v", sampler="grid"
    )
    t = exp.trials.set_index("params_x")
    assert t.loc[0.5, "state"] == "failed"
    cause, *dasks = t.loc[0.5, "error"].splitlines()
    assert cause == (
        "the trial's worker was lost 4 times while running it (killed, out of memory, or preempted); it was not "
        "retried further: the cap is distributed.scheduler.allowed-failures=3"
    )
    assert "KilledWorker" in "\n".join(dasks)  # Dask's own words follow
    assert t.loc[0.5, "error_kind"] == "lost"
    assert list(t.loc[[0.1, 0.9], "state"]) == ["completed", "completed"]
    assert exp.state == "completed" and exp.best.value == 0.9
    assert jd.load(exp.name).trials.set_index("params_x").loc[0.5, "state"] == "failed"
    client.wait_for_workers(2, timeout=60)
