"""The same experiments across hosts: a scheduler, two workers and the client each in a network namespace of its
own (conftest.py). HPO, an ablation study and a 2-rank data-parallel job run there, and the data-parallel result
equals one process training on the whole batch."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.timeout(600)

# The client's side: runs in the "client" namespace and prints one JSON line.
CLIENT = r"""
import json, os, socket
import torch
from torch.utils.data import DataLoader, TensorDataset
import jupyter_dist as jd
from jupyter_dist import space

CLUSTER = os.environ["JUPYTER_DIST_SCHEDULER"]
jd.get_client(CLUSTER).wait_for_workers(2, timeout=60)  # the workers on the other two hosts


def where(x=0.0, features=()):
    import time
    from distributed import get_worker
    time.sleep(0.2)
    jd.report(step=0, y=float(x) + len(features))
    print(get_worker().name)
    return float(x) + len(features)


def regression(per_rank_batch=8, epochs=3):
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(96, 5, generator=data), torch.randn(96, 1, generator=data)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=per_rank_batch, shuffle=False)
    model, optimiser, loader = jd.prepare(model, optimiser, loader)
    for epoch in range(epochs):
        for xb, yb in loader:
            optimiser.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimiser.step()
    import os as _os
    return {"weights": {k: v.detach().clone() for k, v in jd.unwrap(model).state_dict().items()},
            "ifname": _os.environ.get("GLOO_SOCKET_IFNAME")}


hpo = jd.hpo(where, {"x": space.uniform(0, 1)}, trials=8, metric="y", sampler="random", cluster=CLUSTER,
             progress=False, store=False)
ablation = jd.ablation(where, features=["a", "b", "c"], metric="y", cluster=CLUSTER, progress=False, store=False)
ddp = jd.data_parallel(regression, workers=2, cluster=CLUSTER, progress=False, store=False)
alone = regression(per_rank_batch=16)
print(json.dumps({
    "hpo": [hpo.state.value, sorted({hpo.logs(t).split()[0] for t in hpo.trials["trial_id"]})],
    "ablation": [ablation.state.value, len(ablation.trials), sorted({ablation.logs(t).split()[0] for t in ablation.trials["trial_id"]})],
    "ddp": ddp.state.value,
    "ddp_error": ddp.error,
    "ifnames": [r["ifname"] for r in ddp.rank_results or []],
    "equal_to_one_process": all(
        torch.allclose(ddp.result["weights"][k], v, atol=1e-6) for k, v in alone["weights"].items()
    ),
}))
"""


def test_hpo_ablation_and_data_parallel_run_across_hosts(hosts):
    result = hosts.run_client(CLIENT)
    assert result["hpo"] == ["completed", ["w1", "w2"]]  # trials ran on both hosts
    assert result["ablation"][0] == "completed" and result["ablation"][1] == 4
    assert result["ablation"][2] == ["w1", "w2"]
    assert result["ddp"] == "completed", result["ddp_error"]
    # Each rank's gloo used the interface of its worker's own address, not the hostname's 127.0.0.1.
    assert result["ifnames"] == [hosts.link("w1"), hosts.link("w2")] or result["ifnames"] == [
        hosts.link("w2"),
        hosts.link("w1"),
    ]
    assert result["equal_to_one_process"]


CUT = r"""
import json, os, sys, time
import jupyter_dist as jd
from jupyter_dist import space

CLUSTER = os.environ["JUPYTER_DIST_SCHEDULER"]
jd.get_client(CLUSTER).wait_for_workers(2, timeout=60)


def steady(x=0.0):
    import time
    from distributed import get_worker
    print(get_worker().name)
    for step in range(10):
        time.sleep(0.1)
        jd.report(step=step, y=float(x) * step)
    return float(x) * 10


def cut_when_w2_runs(exp):  # a view that cuts w2's link (through the test, below) once w2 is running a trial
    class View:
        cut = False
        def start(self): pass
        def finish(self): pass
        def idle(self):
            if not self.cut and any(r.stdout and "w2" in "".join(r.stdout) for r in exp.trial_records()
                                    if r.state.value == "running"):
                print("CUT", flush=True)
                sys.stdin.readline()  # the test has cut the link
                self.cut = True
    return View()


started = time.monotonic()
run = jd.hpo(steady, {"x": space.uniform(0, 1)}, trials=16, metric="y", sampler="random", pruner=None,
             cluster=CLUSTER, progress=cut_when_w2_runs, store=False)
records = run.trial_records()
print(json.dumps({
    "state": run.state.value, "took": time.monotonic() - started, "trials": len(records),
    "states": sorted({r.state.value for r in records}), "rerun": max(r.attempts for r in records),
    "steps": sorted({r.steps for r in records}),
}))
"""


def test_a_host_cut_off_mid_trial_loses_nothing_its_trials_run_again_elsewhere(hosts):
    out, _ = hosts.run_client_cutting(CUT, "w2")  # mid-trial: w2 is running one
    result = json.loads(out.strip().splitlines()[-1])
    assert result["state"] == "completed" and result["trials"] == 16
    assert result["states"] == ["completed"] and result["steps"] == [10]  # nothing lost, every trial whole
    assert result["rerun"] >= 2  # the trial cut off on w2 ran again (on w1)
    assert result["took"] < 120  # bounded: the scheduler gives a silent host up after its worker TTL


PARTITION = r"""
import json, os, sys, time
import torch
import jupyter_dist as jd
from jupyter_dist import space

CLUSTER = os.environ["JUPYTER_DIST_SCHEDULER"]
jd.get_client(CLUSTER).wait_for_workers(2, timeout=60)


def long_training(steps=600):
    import time
    import torch
    import jupyter_dist as jd

    model = jd.prepare(torch.nn.Linear(64, 64))
    for step in range(steps):
        model(torch.randn(32, 64)).sum().backward()  # an all-reduce every step
        jd.report(step=step, loss=float(step))
        time.sleep(0.05)


def cut_once_training(exp):  # a view that has the test cut w2's link once the ranks are training
    class View:
        cut = False
        def start(self): pass
        def finish(self): pass
        def idle(self):
            if not self.cut and any(r.steps >= 5 for r in exp.trial_records()):
                print("CUT", flush=True)
                sys.stdin.readline()
                self.cut = True
    return View()


started = time.monotonic()
try:
    jd.data_parallel(long_training, workers=2, cluster=CLUSTER, progress=cut_once_training, store=False)
    ended = "completed"
except jd.ExperimentFailed as failed:
    ended = str(failed)
took = time.monotonic() - started
print("ENDED", flush=True)


def where(x=0.0):
    from distributed import get_worker
    print(get_worker().name)
    return x


# Rank 0's worker (w1) was blocked in an all-reduce with a rank it can no longer reach: freed, it runs the next
# experiment.
after = jd.hpo(where, {"x": space.uniform(0, 1)}, trials=4, metric="x", cluster=CLUSTER, progress=False,
               store=False, timeout=60)
print(json.dumps({"ended": ended, "took": took, "after": [after.state.value, len(after.trials)],
                  "workers": sorted({after.logs(t).split()[0] for t in after.trials["trial_id"]})}))
"""


def test_a_partitioned_data_parallel_job_ends_and_frees_its_workers(hosts):
    # Cut while training: rank 0 and rank 1 can no longer reach each other, nor w2 the scheduler.
    out, _ = hosts.run_client_cutting(PARTITION, "w2")
    lines = out.strip().splitlines()
    assert "ENDED" in lines  # no hang
    result = json.loads(lines[-1])
    assert "rank 1's worker" in result["ended"] and "left the cluster" in result["ended"], result
    assert hosts.address("w2") in result["ended"]
    assert result["took"] < 120, result
    assert result["after"] == ["completed", 4] and result["workers"] == ["w1"]  # w1 was freed


UNREACHABLE = r"""
import json, os
import torch
import jupyter_dist as jd

CLUSTER = os.environ["JUPYTER_DIST_SCHEDULER"]
jd.get_client(CLUSTER).wait_for_workers(2, timeout=60)


def training():
    model = jd.prepare(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()


try:
    jd.data_parallel(training, workers=2, cluster=CLUSTER, progress=False, store=False, rendezvous_timeout=5)
    ended = "completed"
except jd.ExperimentFailed as failed:
    ended = str(failed)
print(json.dumps({"ended": ended}))
"""


def test_a_rank_that_cannot_reach_rank_0_fails_naming_the_address(hosts):
    # Both workers still reach the scheduler (and the client), but not each other: the rendezvous cannot happen.
    with hosts.separated("w1", "w2"):
        ended = hosts.run_client(UNREACHABLE, timeout=120)["ended"]
    # Rank 0 gave up waiting, or rank 1 gave up connecting, whichever first: either way the rendezvous address
    # (rank 0's worker's, host and port) and reachability are named.
    either = "|".join(re.escape(hosts.address(worker)) for worker in ("w1", "w2"))
    assert re.search(rf"cannot reach (rank 0 at )?({either}):\d+", ended), ended


ELASTIC_PARTITION = r"""
import json, os, sys, time
import torch
import jupyter_dist as jd

CLUSTER = os.environ["JUPYTER_DIST_SCHEDULER"]
jd.get_client(CLUSTER).wait_for_workers(2, timeout=60)


def training(steps=150):
    import time
    import torch
    import jupyter_dist as jd
    from distributed import get_worker

    torch.manual_seed(0)
    model = jd.prepare(torch.nn.Linear(64, 64))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    state = {"model": model, "optimiser": optimiser}
    restored = jd.restore(state)
    for step in range(0 if restored is None else restored.step + 1, steps):
        optimiser.zero_grad()
        model(torch.randn(32, 64)).sum().backward()  # an all-reduce every step
        optimiser.step()
        jd.report(step=step, world=jd.world_size())
        if step % 5 == 0:
            jd.checkpoint(step, state)
        time.sleep(0.05)
    return {"world": jd.world_size(), "worker": get_worker().name, "resumed_from": restored and restored.step}


cut = []
def cut_once_training(exp):  # a view that has the test cut w2's link once the ranks are training
    class View:
        def start(self): pass
        def finish(self): pass
        def idle(self):
            if not cut and any(r.steps >= 12 for r in exp.trial_records()):
                print("CUT", flush=True)
                sys.stdin.readline()
                cut.append(time.time())
    return View()


started = time.monotonic()
# The test's folder (CHECKPOINTS): one filesystem in every namespace, as a cluster's hosts would share one.
exp = jd.data_parallel(training, workers=2, min_workers=1, cluster=CLUSTER, progress=cut_once_training,
                       store=False, checkpoint_dir=os.environ["CHECKPOINTS"])
restarts = exp.restarts.to_dict("records")
print(json.dumps({"state": exp.state.value, "error": exp.error, "took": time.monotonic() - started,
                  "result": exp.result if exp.state.value == "completed" else None,
                  "regrouped_after_cut": [r["at"].timestamp() - cut[0] for r in restarts],
                  "restarts": [{k: r[k] for k in ("lost", "world_before", "world_after", "lost_at",
                                                  "from_step", "steps_redone", "message")}
                               for r in restarts]}))
"""


def test_an_elastic_job_drops_a_host_whose_link_is_cut_and_goes_on(hosts, tmp_path, monkeypatch):
    # A folder every namespace reaches (one filesystem), named to the client through its environment.
    monkeypatch.setenv("CHECKPOINTS", str(tmp_path))
    out, _ = hosts.run_client_cutting(ELASTIC_PARTITION, "w2")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["state"] == "completed", result["error"]
    # The job ended on the rank left, alone, on w1, having gone on from a checkpoint.
    assert result["result"]["world"] == 1 and result["result"]["worker"] == "w1", result
    (restart,) = result["restarts"]
    assert (restart["world_before"], restart["world_after"]) == (2, 1), restart
    (lost,) = restart["lost"]  # one rank: the one on w2 (rank 1, unless w2 was given rank 0)
    assert f"rank {lost} (worker tcp://{hosts.address('w2')}:" in restart["message"], restart
    assert "continuing on 1 rank from step" in restart["message"], restart
    assert restart["from_step"] >= 10 and restart["from_step"] % 5 == 0, restart
    assert restart["from_step"] == result["result"]["resumed_from"], result
    assert restart["lost_at"] >= 12 and restart["steps_redone"] == restart["lost_at"] - restart["from_step"]
    assert list(tmp_path.iterdir()), "no checkpoint written to the shared folder"
    # Bounded by how long the scheduler takes to give the silent host up: past its worker TTL (6 s here)
    # Dask (distributed 2026.8 here) only tries to restart it through its nanny, which it cannot reach, and
    # drops it when its TCP stream times out (distributed.comm.timeouts.tcp: 15 s on this scheduler, Dask's
    # default 30 s gave 23-26 s after the cut). Then rank 0, stuck in an all-reduce with it, has its worker
    # restarted (~5 s) and the job goes on there.
    assert result["regrouped_after_cut"][0] < 60, result
    assert result["took"] < 150, result
