"""cluster='slurm' on a real one-node Slurm (conftest.py): HPO trials and a data-parallel job on worker jobs that
sbatch submitted, a worker job cancelled mid-trial (scancel) handled as a lost worker, and Slurm's refusals in
its own words, within seconds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import cloudpickle
import dask
import psutil
import pytest
import torch
from IPython.testing import globalipapp

import jupyter_dist as jd
from jupyter_dist.cluster import slurm as _slurm
from jupyter_dist.cluster._dashboard import PROXY_PREFIX_ENV
from jupyter_dist.errors import ClusterError, TrialFunctionError
from jupyter_dist.space import choice

# The worker jobs start in the submitting directory, where this module is not importable.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

STEPS = 24


def training(lr=0.1, marker="", pause=0.15):
    """A small regression that checkpoints every step; at step 8 the first attempt writes its Slurm job id to
    ``marker`` (the test then cancels that job) and goes on slowly until it is gone."""
    torch.manual_seed(0)
    x, y = torch.randn(32, 3, generator=torch.Generator().manual_seed(1)), torch.randn(32, 1)
    model = torch.nn.Linear(3, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    for step in range(start, STEPS):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
        jd.report(step=step, loss=loss.item(), job=float(os.environ.get("SLURM_JOB_ID", "0")))
        jd.checkpoint(step, state)
        time.sleep(pause)
        if marker and step == 8 and not os.path.exists(marker):
            Path(marker).write_text(os.environ["SLURM_JOB_ID"])
            time.sleep(60)  # the job is cancelled meanwhile
    return loss.item()


def _cancel_when_marked(slurm, marker: Path, cancelled: list[str]) -> threading.Thread:
    def cancel() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if marker.exists():
            job = marker.read_text().strip()
            slurm.run("scancel", job)
            cancelled.append(job)

    thread = threading.Thread(target=cancel, daemon=True)
    thread.start()
    return thread


def test_hpo_trials_run_on_slurm_jobs_and_a_cancelled_job_s_trial_resumes_from_its_checkpoint(
    slurm, slurm_cluster, tmp_path
):
    marker, cancelled = tmp_path / "job-to-cancel", []
    thread = _cancel_when_marked(slurm, marker, cancelled)
    exp = jd.hpo(
        training,
        {"lr": choice([0.05, 0.1]), "marker": str(marker)},
        trials=2,
        parallel=2,
        metric="loss",
        mode="min",
        sampler="grid",
        cluster="slurm",
        checkpoint_dir=tmp_path / "checkpoints",
        progress=False,
    )
    thread.join(5)
    assert exp.state == "completed", exp.error
    assert len(cancelled) == 1
    records = exp.trial_records()
    assert all(r.state == "completed" for r in records)
    hit = [r for r in records if r.attempts == 2]
    assert len(hit) == 1, [(r.trial_id, r.attempts) for r in records]
    # The second attempt went on from the newest checkpoint the cancelled job saved, on another Slurm job.
    rec = hit[0]
    assert rec.resumed_from is not None and rec.resumed_from >= 8
    history = exp.history
    mine = history[(history.trial_id == rec.trial_id) & (history.metric == "job")]
    jobs = mine.groupby("attempt").value.first()
    assert str(int(jobs.loc[0])) == cancelled[0] and jobs.loc[1] not in (0, jobs.loc[0])
    assert mine[mine.attempt == 1].step.min() == rec.resumed_from + 1
    # The dashboard is served by the scheduler in this process, linked as the views show it.
    assert exp.dashboard_link and "/status" in exp.dashboard_link


def regression(folder=""):
    """Two ranks of gloo DDP, each on its own Slurm job; every rank writes the job it runs in to ``folder``."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 4, generator=torch.Generator().manual_seed(1)), torch.randn(64, 1)
    model = jd.prepare(torch.nn.Linear(4, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = jd.prepare(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8))
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    for epoch in range(start, 4):
        for xb, yb in loader:
            optimiser.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimiser.step()
        jd.report(step=epoch, loss=torch.nn.functional.mse_loss(model(x), y).item())
        jd.checkpoint(epoch, state)
    (Path(folder) / f"rank-{jd.rank()}").write_text(os.environ["SLURM_JOB_ID"])
    return {"world": jd.world_size()}


def test_a_data_parallel_job_runs_its_ranks_on_separate_slurm_jobs(slurm, slurm_cluster, tmp_path):
    """On the default size, adaptive from 0 worker jobs: adaptive scaling alone never submits jobs for ranks that
    wait for each other, so the run raises the minimum to its ranks, and gives it back when it ends."""
    exp = jd.data_parallel(
        regression,
        workers=2,
        folder=str(tmp_path),
        cluster="slurm",
        checkpoint_dir=tmp_path / "checkpoints",
        progress=False,
    )
    assert exp.state == "completed", exp.error
    assert exp.result["world"] == 2
    # Each rank ran in its own worker job (one Dask worker per Slurm job).
    jobs = {(tmp_path / f"rank-{rank}").read_text() for rank in (0, 1)}
    assert len(jobs) == 2
    assert len(exp.history[exp.history.metric == "loss"]) == 4
    assert jd.cluster_info("slurm").adaptive == "adapting between 0 and 2 worker jobs"


def test_an_adaptive_cluster_below_a_jobs_ranks_grows_for_it_within_the_admins_maximum(slurm, slurm_cluster):
    with dask.config.set({"jupyter_dist.slurm.adapt": {"minimum": 0, "maximum": 1}}):
        jd.use_cluster("slurm", adapt=(0, 1))
        with pytest.raises(
            jd.ClusterError, match=r"needs 2 workers at once \(2 ranks\), and jupyter_dist.slurm.adapt"
        ):
            jd.data_parallel(regression, workers=2, folder="unused", cluster="slurm", progress=False)
        assert jd.cluster_info("slurm").adaptive == "adapting between 0 and 1 worker jobs"  # given back


def scored(features=("a", "b", "c")):
    """The score an ablation ranks: each feature is worth its place in the alphabet."""
    return {"score": float(sum(ord(f) - ord("a") + 1 for f in features))}


def test_an_ablation_runs_its_variants_on_slurm_jobs(slurm, slurm_cluster):
    exp = jd.ablation(scored, features=["a", "b", "c"], metric="score", cluster="slurm", progress=False)
    assert exp.state == "completed", exp.error
    impact = exp.summary().set_index("component").impact
    assert list(impact.loc[["a", "b", "c"]]) == [1.0, 2.0, 3.0]
    assert len(slurm.jobs()) >= 1  # its workers were Slurm jobs


def test_an_unknown_partition_is_refused_in_slurm_s_words_within_seconds(slurm, slurm_cluster):
    started = time.monotonic()
    with dask.config.set({"jupyter_dist.slurm.queue": "no-such-partition"}):
        with pytest.raises(ClusterError, match="invalid partition") as refused:
            jd.hpo(training, {"lr": choice([0.1])}, trials=1, metric="loss", cluster="slurm", progress=False)
    assert time.monotonic() - started < 10
    assert "jupyter_dist.slurm" in str(refused.value) and "#SBATCH -p no-such-partition" in str(refused.value)
    assert _slurm.slurm_cluster() is None  # nothing was left behind


def test_a_job_slurm_refuses_once_the_cluster_runs_fails_the_run_within_seconds(slurm, slurm_cluster):
    jd.use_cluster("slurm", adapt=(0, 2))  # made while the partition takes jobs: no job submitted yet
    slurm.run("scontrol", "update", "PartitionName=debug", "State=INACTIVE")
    try:
        started = time.monotonic()
        with pytest.raises(TrialFunctionError, match="Slurm refused a Dask worker job") as refused:
            jd.hpo(training, {"lr": choice([0.1])}, trials=1, metric="loss", cluster="slurm", progress=False)
        assert time.monotonic() - started < 10
        assert "partition not available (inactive or drain)" in str(refused.value)  # sbatch's own words
    finally:
        slurm.run("scontrol", "update", "PartitionName=debug", "State=UP")


def test_distribute_cluster_slurm_sizes_it_and_its_scheduler_listens_where_slurmctld_is_reached(
    slurm, slurm_cluster, monkeypatch
):
    monkeypatch.setenv(PROXY_PREFIX_ENV, "/user/alice/")  # as the server extension tells its kernels
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_dist")
    info = shell.run_line_magic("distribute_cluster", "slurm --workers 2")
    assert info.kind == "Slurm cluster (dask-jobqueue)"
    assert info.adaptive == "adapting between 2 and 2 worker jobs"
    client = jd.use_cluster()
    client.wait_for_workers(2, timeout=30)
    assert len(slurm.jobs()) == 2
    # This machine's default route has another address; the compute nodes reach slurmctld at 127.0.0.1.
    assert client.scheduler.address.startswith("tcp://127.0.0.1:")
    # The dashboard, through the user's Jupyter server.
    assert info.dashboard.startswith("/user/alice/proxy/") and info.dashboard.endswith("/status")


def test_a_user_s_size_stays_within_the_admin_s_bounds(slurm, slurm_cluster):
    with dask.config.set({"jupyter_dist.slurm.adapt": {"minimum": 0, "maximum": 2}}):
        with pytest.warns(UserWarning, match="allows at most 2 worker jobs: asked for 5 worker jobs"):
            jd.use_cluster("slurm", workers=5)
        assert jd.cluster_info("slurm").adaptive == "adapting between 2 and 2 worker jobs"


def test_a_scheduler_on_a_named_interface_is_linked_through_the_jupyter_server(
    slurm, slurm_cluster, monkeypatch
):
    # The interface of this machine's default route (not loopback), as an admin would name ib0.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.250", 9))
        own = probe.getsockname()[0]
    name = next(n for n, addrs in psutil.net_if_addrs().items() if any(a.address == own for a in addrs))
    monkeypatch.setenv(PROXY_PREFIX_ENV, "/user/alice/")
    with dask.config.set({"jupyter_dist.slurm.interface": name}):
        client = jd.use_cluster("slurm", workers=1)
        client.wait_for_workers(1, timeout=30)
        assert client.scheduler.address.startswith(f"tcp://{own}:")
        port = int(client.dashboard_link.split(":")[2].split("/")[0])
        assert jd.cluster_info("slurm").dashboard == f"/user/alice/proxy/{port}/status"
        # where the proxy goes: this machine's loopback, on which the dashboard is served too
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as page:
            assert page.status == 200


def test_workers_that_cannot_reach_the_scheduler_are_told_with_the_interfaces_to_choose_from(
    slurm, slurm_cluster, tmp_path
):
    # Each worker job's worker in a network namespace of its own, with only its own loopback: as a compute node
    # that cannot reach the address the scheduler listens on. Its nanny gives up after the connect timeout.
    isolated = f'unshare -n sh -c \'ip link set lo up && exec "$0" "$@"\' {sys.executable}'
    # The worker's own connect timeout (distributed's, 30 s) shortened in the job's environment.
    prologue = ["export DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s"]
    with dask.config.set(
        {"jupyter_dist.slurm.options": {"python": isolated, "job_script_prologue": prologue}}
    ):
        started = time.monotonic()
        with pytest.raises(
            TrialFunctionError, match="cannot reach the scheduler at tcp://127.0.0.1:"
        ) as told:
            jd.hpo(training, {"lr": choice([0.1])}, trials=1, metric="loss", cluster="slurm", progress=False)
    message = str(told.value)
    assert (
        "Timed out trying to connect to tcp://127.0.0.1:" in message
    )  # the worker's own words, from its log
    assert "set jupyter_dist.slurm.interface" in message and "lo 127.0.0.1" in message
    assert time.monotonic() - started < 25


def quick(pause=0.5, steps=20):
    """A trial of ``steps`` reports ``pause`` s apart, checkpointing each, reporting the Slurm job it runs in."""
    state = {"done": torch.zeros(1)}
    start = 0
    if (restored := jd.restore(state)) is not None:
        state, start = restored.state, restored.step + 1  # a plain tensor comes back in restored.state
    for step in range(start, steps):
        time.sleep(pause)
        state["done"] += 1
        jd.report(step=step, score=float(state["done"]), job=float(os.environ["SLURM_JOB_ID"]))
        jd.checkpoint(step, state)
    return float(state["done"])


# Slurm's shortest walltime is a minute, so this takes about 100 s: on demand (pytest -m slow), out of CI's run.
@pytest.mark.slow
def test_an_experiment_outlasts_the_walltime_of_its_worker_jobs(slurm, slurm_cluster):
    # One-minute jobs (Slurm's shortest): their workers retire 30 s ± 15 s in, before Slurm would end them, and
    # adaptive scaling submits replacements. The run takes over a minute on 2 workers, so it needs more jobs.
    with dask.config.set({"jupyter_dist.slurm.walltime": "1"}):
        exp = jd.hpo(
            quick,
            {"pause": choice([0.5])},
            trials=12,
            parallel=2,
            metric="score",
            sampler="random",
            pruner=None,
            cluster="slurm",
            progress=False,
        )
    assert exp.state == "completed", exp.error
    assert all(r.state == "completed" for r in exp.trial_records())
    assert exp.trials.value.tolist() == [20.0] * 12  # every trial did each of its steps once, resumed or not
    jobs = set(exp.history[exp.history.metric == "job"].value)
    assert len(jobs) > 2  # more jobs than workers at once: retired workers were replaced
    # No job reached its walltime: each worker retired first (Slurm would have said TIMEOUT).
    log = slurm.log("slurmctld.log")
    assert "TIMEOUT" not in log and "time limit" not in log.lower()


# A kernel, as a process of its own: it uses cluster='slurm' (sized when told to), runs a small HPO there and
# says which scheduler and workers it found.
KERNEL = """
import json, sys, time
import jupyter_dist as jd

def train(lr=0.1):
    for step in range(3):
        jd.report(step=step, score=lr * step)

client = jd.use_cluster("slurm", workers=1) if sys.argv[1] == "size" else jd.use_cluster("slurm")
client.wait_for_workers(1, timeout=60)
exp = jd.hpo(train, {"lr": jd.space.choice([0.1, 0.2])}, trials=2, metric="score", cluster="slurm", progress=False)
workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
print(json.dumps({"address": client.scheduler.address, "workers": workers, "state": str(exp.state.value)}))
"""


def test_a_kept_slurm_cluster_outlives_its_kernel_and_the_next_kernel_uses_it(slurm, tmp_path):
    config = tmp_path / "dask"
    config.mkdir()
    (config / "jupyter_dist.yaml").write_text(
        "jupyter_dist:\n  slurm:\n    cores: 1\n    memory: 1GiB\n    walltime: '00:30:00'\n"
        f"    log-directory: {tmp_path / 'workers'}\n    shutdown-on-close: false\n"
    )
    env = {
        **os.environ,
        "SLURM_CONF": str(slurm.conf),
        "DASK_CONFIG": str(config),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
    }

    def kernel(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", KERNEL, *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = kernel("size")
    assert first["state"] == "completed" and len(first["workers"]) == 1
    jobs = slurm.jobs()
    assert list(jobs.values()) == ["RUNNING"]  # its kernel has ended; the worker job has not
    state = json.loads((tmp_path / "data" / "jupyter_dist" / "slurm-cluster.json").read_text())
    keeper = state["pid"]
    os.kill(keeper, 0)  # the keeper lives on

    second = kernel("reuse")
    assert second == first  # the same scheduler, the same worker: nothing waited in Slurm's queue again
    assert slurm.jobs() == jobs

    from distributed import Client

    with Client(first["address"], set_as_default=False) as client:
        client.shutdown()  # how a user ends a kept cluster: its keeper cancels the jobs and ends
    deadline = time.monotonic() + 30
    while (slurm.jobs() or _alive(keeper)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not slurm.jobs() and not _alive(keeper)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie (ended, not yet reaped by its parent) is not alive
        return stat.read().split()[2] != "Z"
