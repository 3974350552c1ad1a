"""%%distribute in a real IPython shell (no kernel), on the session's embedded LocalCluster."""

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

import jupyter_dist as jd

BODY = """
from jupyter_dist import space, report
grid = {"lr": space.choice([0.1, 0.2, 0.3])}

def train(lr=0.5, epochs=2):
    for e in range(epochs):
        report(step=e, acc=lr * (e + 1))
"""


ABLATION_BODY = """
import jupyter_dist as jd

def train(features=("age", "fare", "sex"), augment=True, seed=0):
    jd.report(step=0, seed=seed)
    return {"acc": len(features) / 3 + 0.1 * augment}

def helper(features):
    return features
"""


@pytest.fixture(scope="module")
def ip(client):
    # The module's attribute, not a name imported at collection: once another test module has started the shared
    # shell, the function imported then would return None (only its first call returns the shell).
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_dist")
    return shell


def test_the_cell_runs_and_the_experiment_is_bound_to_out(ip):
    result = ip.run_cell_magic("distribute", "hpo --trials 5 --metric acc --sampler grid --out result", BODY)
    exp = ip.user_ns["result"]
    assert result is exp and isinstance(exp, jd.Experiment)
    assert exp.state == "completed"
    assert len(exp.trials) == 3  # grid size caps --trials
    assert exp.best.params == {"lr": 0.3} and exp.best.value == pytest.approx(0.6)
    assert callable(ip.user_ns["train"]) and "grid" in ip.user_ns  # what the cell defined stays usable
    assert ip.user_ns["train"](lr=0.1) is None  # and runs unchanged when called directly


def test_the_training_function_is_found_among_helpers(ip):
    body = BODY + "\ndef helper(x):\n    return x\n"
    ip.run_cell_magic("distribute", "hpo --trials 2 --metric acc --sampler random --mode min", body)
    exp = ip.user_ns["exp"]
    assert exp.name == "train" and exp.mode == "min"


def test_fn_and_space_can_be_named(ip):
    body = BODY + "\nother = {'lr': space.uniform(0, 1)}\ndef train2(lr=0.1):\n    return lr\n"
    ip.run_cell_magic(
        "distribute",
        "hpo --trials 2 --metric obj --sampler random --fn train2 --space other "
        "--name named --seed 1 --parallel 1",
        body,
    )
    exp = ip.user_ns["exp"]
    assert (exp.name, len(exp.trials)) == ("named", 2)
    assert exp.trials.params_lr.between(0, 1).all()


@pytest.mark.parametrize(
    "line, body, message",
    [
        ("hpo --trials 2", BODY, "needs --metric"),
        ("tune --metric acc", BODY, "unknown mode"),
        (
            "ddp --workers 2 --trials 3 --mode min",
            BODY,
            "--trials, --mode: not an option of %%distribute ddp",
        ),
        ("hpo --metric acc --workers 2", BODY, "--workers: not an option of %%distribute hpo"),
        ("ablation --metric acc --trials 3 --sampler grid", BODY, "--trials, --sampler: not an option of"),
        ("hpo --metric acc --repeats 2", BODY, "--repeats: not an option of %%distribute hpo"),
        ("ddp --gpus-per-trial 1", BODY, "--gpus-per-trial: not an option of %%distribute ddp"),
        ("ablation --features a --group x", BODY, "needs --metric"),
        ("ablation --metric acc --group oops", ABLATION_BODY, "--group oops: write it as NAME=component"),
        (
            "hpo --metric acc",
            "from jupyter_dist import space\ns = {'lr': space.uniform(0, 1)}\n",
            "defines no training",
        ),
        ("hpo --metric acc", "def f(lr=1):\n    return lr\n", "defines no search space"),
        (
            "hpo --metric acc",
            BODY + "\ndef train3(lr=1, epochs=1):\n    return lr\n",
            "several functions (train, train3)",
        ),
        ("hpo --metric acc", BODY + "\ng2 = {'lr': space.choice([1])}\n", "several search spaces (grid, g2)"),
        ("hpo --metric acc --fn missing", BODY, "no function named 'missing'"),
        ("hpo --metric acc --out 1x", BODY, "not a valid variable name"),
    ],
)
def test_ambiguity_or_a_missing_piece_is_a_clear_error(ip, line, body, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ip.run_cell_magic("distribute", line, body)


@pytest.mark.parametrize(
    "line, message",
    [
        ("hpo --trails 4 --metric acc", "--trails: did you mean --trials?"),
        ("hpo --trials 4 --metrc acc", "--metrc: did you mean --metric?"),
        ("hop --trials 4 --metric acc", "%%distribute hop: unknown mode (did you mean 'hpo'?); use one of"),
        ("ablaton --metric acc", "unknown mode (did you mean 'ablation'?)"),
    ],
)
def test_a_misspelt_option_or_mode_gets_the_nearest_one(ip, line, message):
    ip.user_ns.pop("exp", None)
    with pytest.raises(UsageError) as refused:
        ip.run_cell_magic("distribute", line, BODY)
    assert message in str(refused.value)
    assert "exp" not in ip.user_ns  # refused before the cell ran an experiment


def test_an_unknown_option_far_from_every_known_one_gets_no_hint(ip):
    with pytest.raises(UsageError) as refused:
        ip.run_cell_magic("distribute", "hpo --metric acc --progress none", BODY)
    assert "did you mean" not in str(refused.value) and "--progress" in str(refused.value)


def test_a_bad_space_fails_before_any_trial(ip):
    body = BODY.replace("space.choice([0.1, 0.2, 0.3])", "space.loguniform(0, 1)")
    with pytest.raises(jd.SearchSpaceError, match="lr: loguniform"):
        ip.run_cell_magic("distribute", "hpo --metric acc", body)


def test_a_failed_experiment_is_still_bound(ip):
    body = "from jupyter_dist import space\nsp = {'x': space.uniform(0, 1)}\ndef bad(x=0):\n    raise ValueError('nope')\n"
    with pytest.raises(jd.ExperimentFailed, match="ValueError: nope"):
        ip.run_cell_magic("distribute", "hpo --trials 2 --metric x --sampler random --out failed_exp", body)
    assert ip.user_ns["failed_exp"].state == "failed"


def test_distribute_cluster_shows_and_chooses_the_cluster(ip, client, monkeypatch):
    from jupyter_dist.cluster import _current as _cluster

    monkeypatch.setattr(_cluster, "_chosen", [])
    shown = ip.run_line_magic("distribute_cluster", "")
    assert shown.client is client
    assert (shown.kind, shown.name) == ("embedded LocalCluster", client.scheduler.address)
    assert (shown.workers, shown.threads, shown.gpus) == (2, 2, 0)
    assert shown.memory > 0 and shown.dashboard.startswith("http://127.0.0.1:")
    assert "embedded LocalCluster tcp://127.0.0.1:" in repr(shown) and "2 workers, 2 threads" in repr(shown)
    monkeypatch.setenv("JUPYTER_DIST_CLUSTER", "tcp://127.0.0.1:9")  # chosen in the notebook beats the env
    assert ip.run_line_magic("distribute_cluster", "local").client is client
    assert jd.get_client() is client
    with pytest.raises(jd.ArgumentError, match="adapt= makes a gateway or Slurm cluster"):
        ip.run_line_magic("distribute_cluster", "tcp://127.0.0.1:9 --adapt 0,4")


def test_pruning_and_timeout_options_reach_the_experiment(ip):
    body = """
import time
from jupyter_dist import space, report
sp = {"q": space.choice([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])}
def climb(q=0.5):
    for step in range(9):
        time.sleep(0.01)
        report(step=step, acc=q * (step + 1))
"""
    ip.run_cell_magic(
        "distribute",
        "hpo --metric acc --sampler grid --seed 0 --parallel 1 --pruner median --max-steps 9",
        body,
    )
    exp = ip.user_ns["exp"]
    assert exp.max_steps == 9 and "pruned" in set(exp.trials.state)
    assert exp.best.params == {"q": 0.8}
    ip.run_cell_magic("distribute", "hpo --metric acc --sampler random --timeout 1", body)
    exp = ip.user_ns["exp"]
    assert exp.timeout == 1 and exp.total is None and exp.state == "completed"


def test_an_ablation_study_from_the_magic(ip):
    result = ip.run_cell_magic(
        "distribute",
        "ablation --features age,fare,sex --flags augment --group no_money=fare,augment --metric acc "
        "--repeats 2 --seed 5 --out study",
        ABLATION_BODY,
    )
    assert result is None  # the view already ended with the summary table and chart
    exp = ip.user_ns["study"]
    assert isinstance(exp, jd.AblationExperiment) and exp.state == "completed"
    assert (
        exp.name == "train" and len(exp.trials) == 2 * 6
    )  # the helper beside it is not the training function
    summary = exp.summary().set_index("component")
    assert summary.loc["augment", "delta"] == pytest.approx(-0.1)
    assert summary.loc["no_money", "delta"] == pytest.approx(-1 / 3 - 0.1)
    assert sorted(exp.history.query("metric == 'seed'").value.unique()) == [5, 6]


DDP_BODY = """
import torch
import jupyter_dist as jd

def fit(steps=3):
    model = jd.prepare(torch.nn.Linear(2, 1))
    for step in range(steps):
        model(torch.ones(4, 2)).pow(2).mean().backward()
        jd.report(step=step, world=jd.world_size())
    return jd.rank()
"""


def test_a_data_parallel_run_from_the_magic(ip):
    result = ip.run_cell_magic("distribute", "ddp --workers 2 --backend gloo --out run", DDP_BODY)
    exp = ip.user_ns["run"]
    assert result is exp and isinstance(exp, jd.DataParallelExperiment) and exp.state == "completed"
    assert exp.result == 0 and exp.rank_results == [0, 1]
    assert set(exp.history.value) == {2.0} and len(exp.history) == 3
    with pytest.raises(jd.PlacementError, match="needs 5 workers"):
        ip.run_cell_magic("distribute", "ddp --workers 5", DDP_BODY)


def test_no_store_keeps_a_run_out_of_the_store_and_store_names_the_file(ip, tmp_path):
    cell = "from jupyter_dist import space as sp\ndef quick(lr=0.1):\n    return {'acc': lr}\nbox = {'lr': sp.uniform(0.01, 0.1)}"
    ip.run_cell_magic("distribute", "hpo --metric acc --trials 1 --no-store --out quiet", cell)
    assert ip.user_ns["quiet"].state == "completed"
    assert jd.experiments().empty
    elsewhere = str(tmp_path / "elsewhere.sqlite")
    line = f"hpo --metric acc --trials 1 --fn quick --space box --store {elsewhere} --out kept"
    ip.run_cell_magic("distribute", line, "pass")
    assert list(jd.experiments(store=elsewhere)["id"]) == [ip.user_ns["kept"].id]
    assert jd.experiments().empty
