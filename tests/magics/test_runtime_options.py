"""%%distribute's --max-failures, --cpus-per-trial and --resources, in a real IPython shell on the session's
embedded LocalCluster."""

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

import jupyter_dist as jd

FLAKY_BODY = """
import os
import torch
import jupyter_dist as jd
from jupyter_dist import space
sp = {"x": space.uniform(0, 1), "folder": FOLDER}

def flaky(x=0.0, folder=""):
    attempts = len(os.listdir(folder))
    open(os.path.join(folder, str(attempts)), "w").close()
    jd.report(step=0, v=x, threads=torch.get_num_threads())
    if attempts == 0:
        raise ConnectionError("flaky")
    return x
"""


@pytest.fixture(scope="module")
def ip(client):
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_dist")
    return shell


def test_max_failures_and_cpus_per_trial_reach_the_run_and_its_stored_definition(ip, tmp_path):
    body = FLAKY_BODY.replace("FOLDER", repr(str(tmp_path / "attempts")))
    (tmp_path / "attempts").mkdir()
    line = "hpo --trials 1 --metric v --sampler random --max-failures 1 --cpus-per-trial 2 --out flaky_exp"
    ip.run_cell_magic("distribute", line, body)
    exp = ip.user_ns["flaky_exp"]
    assert exp.state == "completed" and list(exp.trials.attempts) == [2]
    assert set(exp.history.query("metric == 'threads'").value) == {2.0}
    details = jd.load(exp.record.definition.id).record.definition.details
    assert (details["max_failures"], details["cpus_per_trial"], details["resources"]) == (1, 2, {})


def test_resources_are_parsed_and_placed(ip, tmp_path):
    body = FLAKY_BODY.replace("FOLDER", repr(str(tmp_path)))
    with pytest.raises(
        jd.PlacementError, match=r"a trial needs 4e\+09 MEM.*dask worker --resources MEM=4e\+09"
    ):
        ip.run_cell_magic("distribute", "hpo --trials 1 --metric v --resources MEM=4e9", body)
    with pytest.raises(UsageError, match=r"--resources MEM: 'MEM' is not NAME=AMOUNT"):
        ip.run_cell_magic("distribute", "hpo --trials 1 --metric v --resources MEM", body)
    with pytest.raises(UsageError, match=r"--max-failures: not an option of %%distribute ddp"):
        ip.run_cell_magic("distribute", "ddp --max-failures 1", body)


def test_a_share_of_a_gpu_and_gpu_types_are_parsed_and_refused_before_any_work(ip, tmp_path):
    # The session's embedded cluster has no GPU: what --gpus-per-trial and --gpu-type parse to is seen in what
    # they are refused for (a share of a GPU no worker declares; a type no worker has).
    body = FLAKY_BODY.replace("FOLDER", repr(str(tmp_path)))
    with pytest.raises(jd.PlacementError, match=r"a trial needs 0.25 GPU; none of the cluster's"):
        ip.run_cell_magic("distribute", "hpo --trials 1 --metric v --gpus-per-trial 0.25", body)
    with pytest.raises(jd.PlacementError, match=r"gpu_type='H100', 'A100': no worker .* declares a GPU type"):
        ip.run_cell_magic("distribute", "hpo --trials 1 --metric v --gpu-type H100,A100", body)
    with pytest.raises(jd.ArgumentError, match=r"gpus_per_trial=2.5: give a share of one GPU"):
        ip.run_cell_magic("distribute", "hpo --trials 1 --metric v --gpus-per-trial 2.5", body)


WITH_DATA_BODY = """
import numpy as np
import jupyter_dist as jd
from jupyter_dist import space
table = np.arange(4.0)
sp = {"x": space.uniform(0, 1)}

def train(data, x=0.0):
    jd.report(step=0, v=float(data.sum()) + x)

bound = jd.with_parameters(train, data=table)
"""


def test_a_cell_that_binds_its_data_to_its_function_runs_the_bound_one(ip):
    ip.run_cell_magic(
        "distribute", "hpo --trials 2 --metric v --sampler random --out bound_exp", WITH_DATA_BODY
    )
    exp = ip.user_ns["bound_exp"]
    assert exp.state == "completed" and exp.name.startswith("train")
    assert all(abs(t.value - 6.0 - t.params_x) < 1e-9 for t in exp.trials.itertuples())


ELASTIC_BODY = """
import torch
import jupyter_dist as jd

def steps(n=3):
    model = jd.prepare(torch.nn.Linear(2, 1))
    for step in range(n):
        model(torch.ones(1, 2)).sum().backward()
        jd.report(step=step, world=jd.world_size())
"""


def test_the_elastic_range_reaches_the_run_and_its_stored_definition(ip):
    line = "ddp --workers 2 --min-workers 1 --max-workers 2 --elastic-timeout 30 --out elastic_exp"
    ip.run_cell_magic("distribute", line, ELASTIC_BODY)
    exp = ip.user_ns["elastic_exp"]
    assert exp.state == "completed" and exp.restarts.empty
    details = jd.load(exp.record.definition.id).record.definition.details
    assert (details["min_workers"], details["max_workers"], details["elastic_timeout"]) == (1, 2, 30.0)
    with pytest.raises(jd.ArgumentError, match="min_workers=3, workers=2, max_workers=2"):
        ip.run_cell_magic("distribute", "ddp --workers 2 --min-workers 3", ELASTIC_BODY)
