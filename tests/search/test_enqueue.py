"""Known configurations run first (hpo(enqueue=...)) on the real LocalCluster: in order, counted, told to the
sampler as its own trials, checked before any work starts, not run again by a resumed run."""

import time

import optuna
import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import Direction, Objective, Outcome, TrialState
from jupyter_dist.search import OptunaSearch

SPACE = {
    "lr": space.loguniform(1e-4, 1e-1),
    "opt": space.choice(["sgd", "adam"]),
    "layers": space.integer(1, 9, step=2),
    "width": 32,
}


def train(lr=0.01, opt="sgd", layers=1, width=8):
    time.sleep(0.01)
    jd.report(step=0, acc=lr * layers)
    return lr * layers


class Watching(optuna.samplers.RandomSampler):
    """A real sampler that notes every trial it is told of."""

    def __init__(self):
        super().__init__(seed=0)
        self.told = []

    def after_trial(self, study, trial, state, values):
        self.told.append((trial.params, trial.system_attrs.get("fixed_params"), state))


def test_enqueued_configurations_run_first_in_order_and_are_told_to_the_sampler(run_hpo):
    known = [{"lr": 1e-3, "opt": "adam", "layers": 3}, {"opt": "sgd", "layers": 9}]
    sampler = Watching()
    exp = run_hpo(train, SPACE, trials=4, metric="acc", parallel=1, sampler=sampler, enqueue=known)
    records = exp.trial_records()
    assert len(records) == 4  # they count towards trials
    assert records[0].params == {"width": 32, **known[0]}
    assert {k: records[1].params[k] for k in ("opt", "layers")} == known[1]  # lr sampled
    assert 1e-4 <= records[1].params["lr"] <= 1e-1
    assert [r.labels.get("enqueued") for r in records] == [*known, None, None]
    # each told to the sampler as its own trial, with the fixed params Optuna's enqueue_trial gave it
    assert [fixed for _, fixed, _ in sampler.told] == [*known, None, None]
    assert all(state == optuna.trial.TrialState.COMPLETE for _, _, state in sampler.told)
    assert exp.trials.enqueued.tolist()[:2] == known


@pytest.mark.parametrize(
    "enqueue, message",
    [
        (
            [{"lr": 1e-3}, {"momentum": 0.9}],
            "enqueue[1]: 'momentum' is not in the search space (it searches lr, opt, layers)",
        ),
        ([{"width": 64}], "enqueue[0]: 'width' is a constant of the space (width=32)"),
        ([{"opt": "rmsprop"}], "enqueue[0]: opt='rmsprop' is not one of ['sgd', 'adam']"),
        ([{"lr": 0.5}], "enqueue[0]: lr=0.5 is outside loguniform(0.0001, 0.1)"),
        ([{"layers": 4}], "enqueue[0]: layers=4 is not on the steps of integer(1, 9, step=2)"),
        ([{"layers": 3.0}], "enqueue[0]: layers=3.0 is not an int"),
        ({"lr": 1e-3}, "enqueue={'lr': 0.001} is not a list of configurations"),
        ([{"lr": 1e-3}] * 3, "enqueue= has 3 configurations but trials=2"),
    ],
)
def test_a_bad_configuration_is_refused_before_any_work_naming_its_index(run_hpo, enqueue, message):
    with pytest.raises(jd.ArgumentError) as raised:
        run_hpo(train, SPACE, trials=2, metric="acc", enqueue=enqueue)
    assert message in str(raised.value)
    assert jd.experiments().empty


def test_a_function_space_checks_each_configuration_against_the_branch_it_takes(run_hpo):
    def conditional(trial):
        if trial.suggest_categorical("opt", ["sgd", "adam"]) == "sgd":
            trial.suggest_int("layers", 1, 9, step=2)

    with pytest.raises(
        jd.ArgumentError, match=r"enqueue\[1\]: layers=3, but conditional\(trial\) suggests no 'layers'"
    ):
        run_hpo(
            train, conditional, trials=3, metric="acc", enqueue=[{"opt": "sgd"}, {"opt": "adam", "layers": 3}]
        )
    with pytest.raises(
        jd.ArgumentError, match=r"enqueue\[0\]: layers=4 is not on the steps of an int in \[1, 9\]"
    ):
        run_hpo(train, conditional, trials=3, metric="acc", enqueue=[{"opt": "sgd", "layers": 4}])
    with pytest.raises(jd.ArgumentError, match=r"enqueue\[0\]=\{'opt': 'rmsprop'\}: .*rmsprop"):
        run_hpo(train, conditional, trials=3, metric="acc", enqueue=[{"opt": "rmsprop"}])
    exp = run_hpo(
        train, conditional, trials=3, metric="acc", enqueue=[{"opt": "sgd", "layers": 7}, {"opt": "adam"}]
    )
    records = exp.trial_records()
    assert records[0].params == {"opt": "sgd", "layers": 7} and records[1].params == {"opt": "adam"}


def test_a_resumed_run_does_not_run_again_the_configurations_that_ran(run_hpo):
    known = [{"lr": 1e-3, "opt": "adam"}, {"layers": 9}]
    run_hpo(train, SPACE, trials=2, metric="acc", parallel=1, name="warm", enqueue=known)
    more = [*known, {"lr": 1e-2, "opt": "sgd", "layers": 5}]
    exp = run_hpo(train, SPACE, trials=4, metric="acc", parallel=1, name="warm", enqueue=more, resume=True)
    labels = [r.labels.get("enqueued") for r in exp.trial_records()]
    assert labels == [*more, None]  # the first two kept, the new one run next, then one sampled


def test_the_search_tells_optuna_each_trial_and_gives_its_frozen_trial():
    search = OptunaSearch(
        SPACE, trials=3, objective=Objective("acc", Direction.MAX), enqueue=[{"lr": 1e-3}], fn=train
    )
    specs = [search.next_trial() for _ in range(3)]
    for spec, value in zip(specs, [0.1, 0.3, 0.2], strict=True):
        search.tell(Outcome(spec.trial_id, None, TrialState.COMPLETED, value=value))
    frozen = search.frozen_trial(1)
    assert frozen.state == optuna.trial.TrialState.COMPLETE and frozen.value == 0.3
    assert frozen.params == {k: v for k, v in specs[1].params.items() if k != "width"}
    assert search.frozen_trial(0).system_attrs["fixed_params"] == {"lr": 1e-3}
    with pytest.raises(jd.ArgumentError, match="trial_id=7: this search has no such trial"):
        search.frozen_trial(7)
