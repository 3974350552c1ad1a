"""Ablation studies end to end on the session's real LocalCluster (2 worker processes), with real torch models."""

from collections import OrderedDict

import pytest
import torch

import jupyter_dist as jd

FEATURES = ["strong", "weak", "noise"]


def regression(features=tuple(FEATURES), seed=0, steps=300):
    """A task whose answer is known by construction: the target is 2·sin(2·strong) + 0.6·weak + a little noise,
    so leaving out `strong` costs most, `weak` less, `noise` nothing; and without the encoder's activation the
    model is linear and cannot fit the sine."""
    torch.manual_seed(seed)
    data = torch.Generator().manual_seed(1234)  # the same data in every trial; the seed varies the init
    n = 1000
    columns = {name: torch.randn(n, generator=data) for name in FEATURES}
    y = 2 * torch.sin(2 * columns["strong"]) + 0.6 * columns["weak"] + 0.1 * torch.randn(n, generator=data)
    x = torch.stack([columns[f] for f in features], 1)
    model = torch.nn.Sequential(
        OrderedDict(
            encoder=torch.nn.Sequential(
                OrderedDict(linear=torch.nn.Linear(len(features), 32), act=torch.nn.Tanh())
            ),
            head=torch.nn.Linear(32, 1),
        )
    )
    model = jd.ablate(model)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.03)
    train, val = slice(0, 800), slice(800, None)
    for step in range(steps):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[train]).squeeze(1), y[train])
        loss.backward()
        optimiser.step()
        if step % 50 == 49:
            with torch.no_grad():
                val_loss = torch.nn.functional.mse_loss(model(x[val]).squeeze(1), y[val]).item()
            jd.report(step=step, val_loss=val_loss)
    return val_loss


def test_the_study_ranks_components_by_their_known_importance(run_ablation):
    exp = run_ablation(
        regression,
        features=FEATURES,
        modules=["encoder.act"],
        groups={"weak_and_noise": ["weak", "noise"]},
        metric="val_loss",
        mode="min",
        repeats=3,
    )
    assert exp.state == "completed" and exp.kind == "ablation"
    summary = exp.summary()
    assert list(summary.columns) == ["component", "kind", "mean", "std", "delta", "impact", "n"]
    assert summary.iloc[0].component == "baseline" and summary.iloc[0].delta == 0
    assert (summary.n == 3).all() and summary["std"].notna().all()
    impact = summary.set_index("component").impact
    # ranked by impact, the most important first
    assert list(summary.impact.iloc[1:]) == sorted(summary.impact.iloc[1:], reverse=True)
    ranked_features = [c for c in summary.component if c in FEATURES]
    assert ranked_features == ["strong", "weak", "noise"]
    spread = summary.set_index("component")["std"]
    assert impact["strong"] > 1.0 and impact["encoder.act"] > 1.0  # each costs most of the signal
    assert impact["weak"] > 5 * spread["weak"] > 0  # clearly hurts, well beyond the noise between repeats
    assert abs(impact["noise"]) < impact["weak"] / 5
    assert impact["weak_and_noise"] == pytest.approx(impact["weak"], rel=0.3)
    # mode="min": delta is the loss without it minus the baseline's, impact the same sign
    assert (summary.delta == summary.impact).all()

    trials = exp.trials
    assert len(trials) == 3 * 6
    assert list(trials.columns[:4]) == ["trial_id", "ablated", "kind", "repeat"]
    assert trials.groupby("ablated").size().to_dict() == {
        "baseline": 3,
        "strong": 3,
        "weak": 3,
        "noise": 3,
        "encoder.act": 3,
        "weak_and_noise": 3,
    }
    assert trials.set_index("trial_id").loc[2, "params_features"] == ["strong", "noise"]
    assert exp._highlight().startswith("baseline val_loss=")

    figure = exp.plot()
    bars = figure.data[0]
    assert (
        list(bars.y)
        == [f"{c} ({k})" for c, k in zip(summary.component[1:], summary.kind[1:], strict=True)][::-1]
    )
    assert bars.error_x.visible and list(bars.x) == list(summary.delta[1:][::-1])
    assert exp._final_outputs()[0].equals(summary)


def flagged(features=("a", "b"), augment=True, seed=0):
    jd.report(step=0, n_features=len(features), augment=float(augment), seed=seed)
    return {"score": len(features) + augment}


def test_each_trial_receives_what_its_variant_leaves_out(run_ablation):
    exp = run_ablation(
        flagged,
        features=["a", "b"],
        flags=["augment"],
        metric="score",
        repeats=2,
        seed=7,
    )
    last = exp.history.pivot_table(index="trial_id", columns="metric", values="value")
    # the function's seed= as it reported it; exp.trials' own seed column is what its generators were seeded with
    trials = exp.trials.set_index("trial_id").join(last, rsuffix="_reported")
    baseline = trials[trials.ablated == "baseline"]
    assert (baseline.n_features == 2).all() and (baseline.augment == 1).all()
    assert (trials[trials.ablated == "a"].n_features == 1).all()
    assert (trials[trials.ablated == "augment"].augment == 0).all()
    assert (trials[trials.ablated == "augment"].n_features == 2).all()
    assert sorted(trials.seed_reported.unique()) == [7, 8]
    assert (trials.groupby("repeat").seed_reported.nunique() == 1).all()
    assert (trials.groupby("repeat").seed.nunique() == 1).all() and trials.seed.nunique() == 2
    summary = exp.summary().set_index("component")
    assert summary.loc["a", "delta"] == -1 and summary.loc["augment", "impact"] == 1


def test_a_module_the_model_lacks_fails_the_study_naming_the_modules_it_has(run_ablation):
    with pytest.raises(jd.ExperimentFailed, match="no module 'encoder.nope'") as failed:
        run_ablation(
            regression,
            modules=["encoder.nope"],
            metric="val_loss",
            mode="min",
            repeats=4,
        )
    exp = failed.value.experiment
    error = exp.trials.error.iloc[0]
    assert "its modules are: 'encoder', 'encoder.linear', 'encoder.act', 'head'" in error
    assert len(exp.trials) < 8  # the baseline's failure stopped the study: every variant would fail the same


def test_a_removal_that_breaks_shapes_fails_that_variant_only_and_names_the_module(run_ablation):
    exp = run_ablation(
        regression,
        modules=["encoder.linear", "encoder.act"],
        metric="val_loss",
        mode="min",
    )
    assert exp.state == "completed"
    states = exp.trials.set_index("ablated").state.to_dict()
    assert states == {"baseline": "completed", "encoder.linear": "failed", "encoder.act": "completed"}
    error = exp.trials.set_index("ablated").error["encoder.linear"]
    assert "AblationError: removing module 'encoder.linear' broke the model's forward pass" in error
    assert "mat1 and mat2 shapes cannot be multiplied" in error  # the original error, kept
    row = exp.summary().set_index("component").loc["encoder.linear"]
    assert row.n == 0 and row.isna()["mean"]


def forgets_ablate(features=("a",)):
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(1, 1))
    return float(model(torch.ones(1, 1)).item() * 0)


def test_a_study_of_modules_needs_the_function_to_call_ablate(run_ablation):
    with pytest.raises(jd.ExperimentFailed, match=r"never called jupyter_dist.ablate\(model\)"):
        run_ablation(
            forgets_ablate,
            modules=["0"],
            metric="objective",
        )


def counts_ablated(width=4):
    model = jd.ablate(torch.nn.Sequential(torch.nn.Linear(2, width), torch.nn.ReLU()))
    return {"ablated": sum(type(m).__name__ == "Ablated" for m in model.modules()), "width": width}


def test_ablate_changes_nothing_outside_an_ablation_trial(run_hpo):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    assert jd.ablate(model) is model and isinstance(model[0], torch.nn.Linear)
    exp = run_hpo(
        counts_ablated,
        {"width": jd.space.choice([2, 4])},
        trials=2,
        metric="ablated",
        sampler="grid",
    )
    assert exp.trials.state.eq("completed").all() and (exp.trials.value == 0).all()


def test_the_removed_module_shows_what_it_replaced(run_ablation):
    exp = run_ablation(
        counts_ablated,
        modules=["1"],
        metric="ablated",
        mode="min",
    )
    assert exp.summary().set_index("component").loc["1", "mean"] == 1  # one module replaced in that trial
    assert exp.summary().set_index("component").loc["baseline", "mean"] == 0
    from jupyter_dist.ablation._identity import Ablated

    assert "removed 'encoder.block2'" in repr(Ablated("encoder.block2"))
