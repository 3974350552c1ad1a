"""exp.extend(trial_id, max_steps=N), on the real LocalCluster: a finished trial trained on from its newest
checkpoint as its next attempt (no step done again, the curve continued, live and read back from the store), and
every refusal said before any work starts."""

from __future__ import annotations

import pytest
import torch

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.experiment import ExtendWarning
from jupyter_dist.store import StoreReader

SPACE = {"lr": space.choice([0.05, 0.2])}


def fit(lr=0.1, epochs=5, checkpoints=True, fail=False, scale=1.0):
    """A deterministic regression: the same weights whether it runs straight through or goes on from a
    checkpoint (plain SGD: the model is the whole state)."""
    if fail:
        raise RuntimeError("this configuration fails")
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 3, generator=data), torch.randn(64, 1, generator=data)
    model = torch.nn.Linear(3, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    state = {"model": model, "optimiser": optimiser}
    start = 0
    if checkpoints and (restored := jd.restore(state)) is not None:
        start = restored.step + 1
    loss = None
    for step in range(start, epochs):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
        jd.report(step=step, loss=loss.item() * scale)
        if checkpoints:
            jd.checkpoint(step, state)
    return None if loss is None else loss.item() * scale


def straight_loss(lr: float, epochs: int) -> float:
    """The loss a run of ``epochs`` steps never interrupted ends with (reported before its last update)."""
    return fit(lr=lr, epochs=epochs, checkpoints=False)


def test_a_trial_extended_goes_on_from_its_checkpoint_as_its_next_attempt(run_hpo, fresh_store):
    exp = run_hpo(fit, SPACE, trials=2, metric="loss", mode="min", pruner=None, name="fit", seed=0)
    best = exp.best
    before = exp.record.trial(best.trial_id)
    seconds_before = before.duration

    assert exp.extend(best.trial_id, max_steps=9, epochs=9, progress=False) is exp
    rec = exp.record.trial(best.trial_id)
    assert rec.state == "completed" and rec.attempts == 2 and rec.steps == 9
    assert rec.resumed_from == 4 and rec.labels["extended"] == 9
    history = exp.history[exp.history.trial_id == best.trial_id]
    assert sorted(history[history.attempt == 0].step) == [0, 1, 2, 3, 4]
    assert sorted(history[history.attempt == 1].step) == [5, 6, 7, 8]  # no step done again
    assert rec.curve_steps == list(range(9))  # the live curve goes on
    # The weights went on from the checkpoint: the same loss as nine steps run straight through.
    assert rec.value == pytest.approx(straight_loss(best.params["lr"], 9), rel=1e-6)
    row = exp.trials.set_index("trial_id").loc[best.trial_id]
    assert row.value == rec.value and row.steps == 9 and row.attempts == 2 and row.extended == 9
    assert rec.duration > seconds_before
    assert exp.state == "completed" and len(exp.trials) == 2  # no trial added
    study_trial = next(t for t in exp.study.trials if t.user_attrs["trial_id"] == best.trial_id)
    assert study_trial.value == rec.value
    logs = exp.logs(best.trial_id)
    assert "attempt 2 (extended to 9 steps)" in logs and "resumed from its checkpoint of step 4" in logs

    # Read back from the store, the curve is one line from step 0, and it extends again from there.
    loaded = jd.load("fit")
    again = loaded.record.trial(best.trial_id)
    assert (again.attempts, again.steps, again.value) == (2, 9, rec.value)
    assert again.curve_steps == list(range(9))
    loaded.extend(best.trial_id, max_steps=12, epochs=12, fn=fit, progress=False)
    third = jd.load("fit").record.trial(best.trial_id)
    assert (third.attempts, third.steps, third.labels["extended"]) == (3, 12, 12)
    assert third.curve_steps == list(range(12))  # three attempts, one curve
    # ... and so the REST API draws it, for the JupyterLab views.
    page = StoreReader(fresh_store).curves(exp.id, trials=str(best.trial_id))
    assert [(t[0], t[1], list(t[2])) for t in page["trials"]] == [(best.trial_id, 2, list(range(12)))]
    assert third.value == pytest.approx(straight_loss(best.params["lr"], 12), rel=1e-6)


def test_the_function_s_own_budget_is_named_when_it_ends_the_extension(run_hpo):
    exp = run_hpo(fit, SPACE, trials=1, metric="loss", mode="min", store=False, seed=0)
    with pytest.warns(
        ExtendWarning, match=r"ended at 5 of max_steps=8 .*exp.extend\(0, max_steps=8, epochs=8\)"
    ):
        exp.extend(0, max_steps=8, progress=False)
    rec = exp.record.trial(0)
    assert rec.state == "completed" and rec.steps == 5 and rec.attempts == 2


def test_what_cannot_be_extended_is_refused_before_any_work_starts(run_hpo):
    exp = run_hpo(
        fit, {"fail": space.choice([False, True])}, trials=2, metric="loss", mode="min", sampler="grid"
    )
    ok, failed = (r.trial_id for r in sorted(exp.trial_records(), key=lambda r: r.state != "completed"))
    reports = exp.reports
    cases = [
        ((99, 9), {}, r"has no trial 99: its trials are 0, 1"),
        ((ok, 5), {}, r"max_steps=5: trial \d of 'fit' has trained 5 steps already; .*max_steps > 5"),
        ((ok, "9"), {}, r"max_steps='9'"),
        ((ok, 9), {"epoch": 9}, r"epoch= is not an argument of fit\(\)"),
        ((failed, 9), {}, r"cannot be extended: it failed: exp.reproduce"),
        ((ok, 9), {"fn": 3}, r"fn=3 is not a function"),
    ]
    for args, keywords, message in cases:
        with pytest.raises(jd.ArgumentError, match=message):
            exp.extend(*args, **keywords)
    assert exp.reports == reports and exp.record.trial(ok).attempts == 1  # nothing ran

    never = run_hpo(fit, {"checkpoints": False}, trials=1, metric="loss", mode="min", name="never")
    with pytest.raises(
        jd.ArgumentError, match=r"trial 0 of 'never' saved no checkpoint: .*jupyter_dist.restore"
    ):
        never.extend(0, max_steps=9)


def test_a_pruned_trial_trains_on_to_completion(run_hpo):
    import optuna

    # A loss 100 times larger is pruned from its report of step 2 on, after its checkpoint of step 1.
    pruner = optuna.pruners.ThresholdPruner(upper=50, n_warmup_steps=2)
    exp = run_hpo(
        fit,
        {"scale": space.choice([1.0, 100.0])},
        trials=2,
        sampler="grid",
        metric="loss",
        mode="min",
        pruner=pruner,
    )
    pruned = next(r for r in exp.trial_records() if r.state == "pruned")
    saved = pruned.checkpoint_step  # 1, or later: the stop reaches the trial at a report after the decision
    exp.extend(pruned.trial_id, max_steps=8, epochs=8, progress=False)
    rec = exp.record.trial(pruned.trial_id)
    assert (rec.state, rec.steps, rec.resumed_from, rec.attempts) == ("completed", 8, saved, 2)
    assert rec.value == pytest.approx(100 * straight_loss(0.1, 8), rel=1e-6)
    assert exp.counts()["pruned"] == 0 and exp.counts()["completed"] == 2


class ExtendsWhileRunning(jd.Callback):
    def __init__(self) -> None:
        self.refused: list[str] = []

    def on_trial_end(self, exp, trial) -> None:
        try:
            exp.extend(trial.trial_id, max_steps=20)
        except jd.ArgumentError as exc:
            self.refused.append(str(exc))


def test_an_experiment_that_still_runs_is_not_extended(run_hpo):
    hook = ExtendsWhileRunning()
    run_hpo(fit, SPACE, trials=2, metric="loss", mode="min", callbacks=[hook], name="live")
    assert len(hook.refused) == 2
    assert hook.refused[0].startswith("'live' is still running: extend a trial once the experiment has ended")
