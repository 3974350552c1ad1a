"""%%distribute hpo with a space function (define-by-run) and --enqueue, on the real LocalCluster."""

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

CONDITIONAL = """
import time
from jupyter_dist import report

def train(opt="adam", lr=0.1, momentum=0.0):
    time.sleep(0.01)
    report(step=0, acc=lr + momentum)

def space_fn(trial):
    if trial.suggest_categorical("opt", ["sgd", "adam"]) == "sgd":
        trial.suggest_float("momentum", 0.0, 0.9)
    trial.suggest_float("lr", 0.01, 0.1)
"""


@pytest.fixture(scope="module")
def ip(client):
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_dist")
    return shell


def test_the_cell_s_space_function_is_picked_up_and_not_taken_for_the_training_function(ip):
    ip.run_cell_magic(
        "distribute", "hpo --trials 4 --metric acc --sampler random --seed 0 --out cond", CONDITIONAL
    )
    exp = ip.user_ns["cond"]
    assert exp.state == "completed" and exp.name == "train" and len(exp.trials) == 4
    for rec in exp.trial_records():
        assert ("momentum" in rec.params) == (rec.params["opt"] == "sgd")


def test_space_names_a_function_and_enqueue_names_a_list(ip):
    body = CONDITIONAL.replace("def space_fn(trial)", "def other(trial)") + (
        "\nspace_fn = other\nknown = [{'opt': 'sgd', 'momentum': 0.5, 'lr': 0.05}]\n"
    )
    ip.run_cell_magic(
        "distribute",
        "hpo --trials 2 --metric acc --sampler random --space space_fn --enqueue known --out named",
        body,
    )
    first = ip.user_ns["named"].trial_records()[0]
    assert first.params == {"opt": "sgd", "momentum": 0.5, "lr": 0.05}
    assert first.labels == {"enqueued": {"opt": "sgd", "momentum": 0.5, "lr": 0.05}}


@pytest.mark.parametrize(
    "line, body, message",
    [
        ("hpo --metric acc --enqueue nowhere", CONDITIONAL, "--enqueue nowhere: no variable named 'nowhere'"),
        (
            "hpo --metric acc --space train2",
            CONDITIONAL + "train2 = 3\n",
            "--space train2: no dict or function",
        ),
        (
            "hpo --metric acc",
            CONDITIONAL + "def space2(trial):\n    return None\n",
            "the cell defines several search spaces (space_fn, space2)",
        ),
        (
            "hpo --metric acc --enqueue bad",
            CONDITIONAL + "bad = [{'opt': 'adam', 'momentum': 0.1}]\n",
            "enqueue[0]: momentum=0.1, but space_fn(trial) suggests no 'momentum'",
        ),
    ],
)
def test_a_missing_or_bad_piece_is_a_clear_error(ip, line, body, message):
    with pytest.raises((UsageError, ValueError)) as raised:
        ip.run_cell_magic("distribute", line, body)
    assert message in str(raised.value)
