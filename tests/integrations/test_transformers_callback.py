"""The Hugging Face report callback in real HPO runs: a real ``transformers.Trainer`` training a tiny model built
here (no download, no network) on the shared LocalCluster, reporting through the callback and pruned by ASHA."""

from __future__ import annotations

import tempfile

import pytest

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import torch  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

import jupyter_dist as jd  # noqa: E402
from jupyter_dist import space  # noqa: E402
from jupyter_dist.integrations.transformers import ReportCallback  # noqa: E402

EPOCHS = 9
BATCHES = 4  # optimizer steps per epoch
# As in the Lightning test: plain SGD on well-conditioned least squares, where the largest of these learning
# rates has the lowest loss at every evaluation, so ASHA may prune any other trial, never it.
LEARNING_RATES = [0.0, 0.003, 0.01, 0.03, 0.1, 0.2]


class Regression(torch.nn.Module):
    """What Trainer needs of a model: keyword inputs, and a dict with the loss when given labels."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def forward(self, x, labels=None):
        out = self.net(x)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}


class Pairs(torch.utils.data.Dataset):
    def __init__(self, x, y) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def fit(lr=0.1, epochs=EPOCHS, callback=None):
    """Train on the same data from the same initial weights; only the learning rate differs between trials."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64 * BATCHES, 8, generator=gen)
    y = x @ torch.randn(8, 1, generator=gen)
    torch.manual_seed(0)
    model = Regression()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            out,
            learning_rate=lr,
            num_train_epochs=epochs,
            per_device_train_batch_size=64,
            per_device_eval_batch_size=256,
            optim="sgd",
            lr_scheduler_type="constant",
            eval_strategy="epoch",
            save_strategy="no",
            logging_steps=2,
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
            seed=0,
        )
        data = Pairs(x, y)
        trainer = Trainer(
            model, args, train_dataset=data, eval_dataset=data, callbacks=[callback or ReportCallback()]
        )
        trainer.train()
    return trainer


def train(lr=0.1):
    fit(lr)
    # Reached only when train() returned: a pruned trial's train() raises instead.
    jd.report(step=10**6, finished=1.0)


def test_asha_prunes_hugging_face_trials_through_the_callback(client):
    exp = jd.hpo(
        train,
        {"lr": space.choice(LEARNING_RATES)},
        trials=None,
        metric="eval_loss",
        mode="min",
        sampler="grid",
        pruner="asha",
        max_steps=EPOCHS * BATCHES,  # the callback reports at the optimizer steps taken
        seed=0,
        parallel=1,
        cluster=client,
        progress=False,
    )
    t, history = exp.trials, exp.history
    assert len(t) == len(LEARNING_RATES)
    assert set(t.state) <= {"completed", "pruned"}, t[["state", "error"]]  # pruned, never failed
    assert t.error.isna().all()
    assert exp.best.params == {"lr": max(LEARNING_RATES)}
    # metrics=None: the evaluation's metrics without the epoch and the speed measurements (eval_runtime...).
    assert set(history.metric) == {"eval_loss", "finished"}
    pruned, completed = t[t.state == "pruned"], t[t.state == "completed"]
    assert len(pruned) >= 2
    assert (pruned.params_lr < max(LEARNING_RATES)).all()
    for row in pruned.itertuples():
        reports = history[history.trial_id == row.trial_id]
        assert "finished" not in set(reports.metric)  # train() raised: the function went no further
        assert len(reports) < EPOCHS  # stopped at the evaluation the pruner decided on
    for row in completed.itertuples():
        reports = history[(history.trial_id == row.trial_id) & (history.metric == "eval_loss")]
        assert reports.step.tolist() == [
            BATCHES * (epoch + 1) for epoch in range(EPOCHS)
        ]  # one per evaluation
        assert row.value == pytest.approx(reports.value.iloc[-1])  # the objective is the last reported one


def train_logging_too(lr=0.1):
    fit(lr, epochs=3, callback=ReportCallback(["loss", "eval_loss"], on_log=True))


def test_on_log_reports_the_training_loss_beside_the_evaluation(client):
    exp = jd.hpo(
        train_logging_too,
        {"lr": space.choice([0.1])},
        trials=1,
        metric="eval_loss",
        mode="min",
        pruner=None,
        cluster=client,
        progress=False,
    )
    history = exp.history
    assert set(history.metric) == {"loss", "eval_loss"}  # picked by name; grad_norm, learning_rate left out
    assert history[history.metric == "loss"].step.tolist() == [2, 4, 6, 8, 10, 12]  # every logging_steps
    assert history[history.metric == "eval_loss"].step.tolist() == [4, 8, 12]  # not again from on_log
    assert exp.trials.state.tolist() == ["completed"]


def test_outside_an_experiment_the_callback_changes_nothing():
    trainer = fit(0.1, epochs=2)  # called directly, as in the notebook: report() does nothing
    assert trainer.state.global_step == 2 * BATCHES


def test_picked_names_follow_metric_for_best_model():
    from jupyter_dist.integrations.transformers import _eval_name, _is_metric

    logged = {
        "eval_loss": 0.5,
        "eval_accuracy": 0.75,
        "eval_runtime": 0.1,
        "eval_samples_per_second": 9.0,
        "epoch": 1.0,
    }

    def picked(cb):
        return cb.metrics.pick(logged, _is_metric, _eval_name)

    assert picked(ReportCallback()) == {"eval_loss": 0.5, "eval_accuracy": 0.75}
    assert picked(ReportCallback("accuracy")) == {"eval_accuracy": 0.75}
    assert picked(ReportCallback(["eval_loss", "f1"])) == {"eval_loss": 0.5}  # f1: not logged this time
    assert picked(ReportCallback({"acc": "accuracy"})) == {"acc": 0.75}


def test_bad_metrics_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"metrics=\{'acc': 1\}\): give a name, a list of names, or a dict"):
        ReportCallback({"acc": 1})
