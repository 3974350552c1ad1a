"""Several objectives on the real LocalCluster: Optuna's multi-objective samplers, the Pareto front against a known
one, the Pareto-aware pruner Optuna does not have, constraints, and what is refused before anything runs."""

from __future__ import annotations

import functools
import math
import time

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.errors import ArgumentError
from jupyter_dist.search import hypervolume, minimised, non_dominated, ranks

SPACE = {"x": space.uniform(0.0, 1.0), "y": space.uniform(0.0, 1.0)}
STEPS = 9


def two_costs(x=0.5, y=0.5, steps=STEPS, pause=0.0):
    """Both objectives minimised; the true front is y = 0.5, cost_b = 1 - sqrt(cost_a). Each step reports both,
    shrinking towards the final values by the same factor, so every step ranks the trials as the end will."""
    final_a, final_b = x, 1 - math.sqrt(x) + 4 * (y - 0.5) ** 2
    for step in range(steps):
        factor = 1 + 1 / (step + 1)
        time.sleep(pause)
        jd.report(step=step, cost_a=final_a * factor, cost_b=final_b * factor)
    return {"cost_a": final_a, "cost_b": final_b}


@pytest.fixture
def run_multi(client):
    return functools.partial(
        jd.hpo, cluster=client, progress=False, metric=["cost_a", "cost_b"], mode=["min", "min"]
    )


def distance_to_front(a: float, b: float) -> float:
    """How far above the true front a point lies (in cost_b)."""
    return b - (1 - math.sqrt(max(0.0, a)))


def check_front(exp) -> None:
    """exp.pareto is exactly the non-dominated completed trials."""
    done = exp.trials[exp.trials.state == "completed"]
    vectors = {
        row.trial_id: (row.value, exp.record.trial(row.trial_id).last["cost_b"]) for row in done.itertuples()
    }
    expected = {
        tid
        for tid, v in vectors.items()
        if not any(w[0] <= v[0] and w[1] <= v[1] and w != v for w in vectors.values())
    }
    assert set(exp.pareto.trial_id) == expected


@pytest.mark.parametrize(
    ("sampler", "worst", "median"),
    # NSGA-II's first generation (50 trials) is random sampling; TPE learns from the first 10 on.
    [("nsga2", 0.4, 0.15), ("tpe", 0.4, 0.08)],
)
def test_the_front_found_is_non_dominated_and_close_to_the_true_one(run_multi, sampler, worst, median):
    exp = run_multi(two_costs, SPACE, trials=40, sampler=sampler, pruner=None, seed=1)
    assert (
        exp.state == "completed"
        and exp.study.directions == [__import__("optuna").study.StudyDirection.MINIMIZE] * 2
    )
    check_front(exp)
    front = exp.pareto
    assert list(front.columns[:3]) == ["trial_id", "values_cost_a", "values_cost_b"]
    assert len(front) >= 4
    gaps = [distance_to_front(a, b) for a, b in zip(front.values_cost_a, front.values_cost_b, strict=True)]
    assert max(gaps) < worst and sorted(gaps)[len(gaps) // 2] < median
    with pytest.raises(ArgumentError, match="no one trial is best. exp.pareto"):
        _ = exp.best
    assert "Pareto front:" in exp.status_line()


def test_the_pareto_pruner_keeps_the_front_at_a_fraction_of_the_steps(run_multi):
    """The same 27 configurations (a grid) with no pruning and with the default Pareto pruner, one trial at a time
    so that both see the same history: the pruned run uses well under the steps and finds a front whose
    hypervolume is within a few percent of the full run's."""
    grid = {
        "x": space.choice([0.02, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0]),
        "y": space.choice([0.1, 0.5, 0.7]),
        "pause": 0.02,  # a training step: the stop reaches a pruned trial before its end
    }
    full = run_multi(
        two_costs, grid, trials=None, sampler="grid", pruner=None, parallel=1, max_steps=STEPS, seed=0
    )
    pruned = run_multi(two_costs, grid, trials=None, sampler="grid", parallel=1, max_steps=STEPS, seed=0)
    assert pruned.record.definition.details["pruner"] == "'pareto'"
    assert (pruned.trials.state == "pruned").sum() >= 8
    steps_full, steps_pruned = full.trials.steps.sum(), pruned.trials.steps.sum()
    assert steps_pruned < 0.75 * steps_full, pruned.trials[["state", "steps"]].to_string()
    reference = [1.1, 1.1]

    def volume(exp):
        front = exp.pareto
        return hypervolume(list(zip(front.values_cost_a, front.values_cost_b, strict=True)), reference)

    assert volume(pruned) >= 0.97 * volume(full)
    check_front(pruned)


def test_constraints_keep_infeasible_trials_off_the_front(run_multi):
    exp = run_multi(
        two_costs,
        SPACE,
        trials=24,
        sampler="tpe",
        pruner=None,
        seed=2,
        constraints=lambda m: [0.3 - m["cost_a"]],  # cost_a >= 0.3
    )
    records = [r for r in exp.trial_records() if r.state == "completed"]
    assert all(r.constraints == [pytest.approx(0.3 - r.value)] for r in records)
    assert any(r.value < 0.3 for r in records)  # some broke it...
    assert len(exp.pareto) and (exp.pareto.values_cost_a >= 0.3).all()  # ...and are not on the front
    # Optuna's own front of the study, which holds each trial's constraints, is the same
    assert {t.user_attrs["trial_id"] for t in exp.study.best_trials} == set(exp.pareto.trial_id)
    assert (
        exp.record.definition.details["control"]["constraints"]
        == "test_constraints_keep_infeasible_trials_off_the_front.<locals>.<lambda>"
    )


def test_a_stored_multi_objective_search_loads_and_resumes(run_multi):
    first = run_multi(two_costs, SPACE, trials=6, sampler="random", pruner=None, seed=0, name="both")
    loaded = jd.load("both")
    assert loaded.pareto.equals(first.pareto)
    assert [m for m, _ in loaded.record.definition.objective.others] == ["cost_b"]
    more = run_multi(
        two_costs, SPACE, trials=10, sampler="random", pruner=None, seed=0, name="both", resume=True
    )
    assert len(more.trials) == 10 and len(more.study.trials) == 10
    with pytest.raises(ArgumentError, match=r"optimised 'cost_a' \(min\), 'cost_b' \(min\)"):
        jd.hpo(
            two_costs, SPACE, trials=12, metric="cost_a", mode="min", name="both", resume=True, progress=False
        )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(pruner="asha"), "judges one objective, and this search has 2 (cost_a, cost_b)"),
        (dict(pruner="median"), "Optuna cannot prune a multi-objective study"),
        (dict(sampler="cmaes"), "sampler='cmaes' optimises one objective"),
        (dict(mode="min"), "give one mode each, e.g. mode=['max', 'min']"),
        (dict(mode=["min", "up"]), "mode='up': use 'max' or 'min'"),
        (dict(metric=["cost_a", "cost_a"], mode=["min", "min"]), "each objective once"),
        (dict(objective_scope="max"), "several objectives are each valued"),
        (dict(constraints=5), "constraints=5: give a function"),
        (dict(target=0.1), "no one value says the search is done"),
    ],
)
def test_what_cannot_work_is_refused_before_anything_runs(arguments, message):
    given = dict(
        metric=["cost_a", "cost_b"], mode=["min", "min"], progress=False, cluster="tcp://127.0.0.1:1"
    )
    given.update(arguments)
    with pytest.raises(ArgumentError) as refused:
        jd.hpo(two_costs, SPACE, trials=4, **given)
    assert message in str(refused.value)


def test_pruner_pareto_is_for_several_objectives():
    with pytest.raises(ArgumentError, match="it is for several objectives"):
        jd.hpo(two_costs, SPACE, metric="cost_a", mode="min", pruner="pareto", cluster="tcp://127.0.0.1:1")


def test_a_constraints_function_that_answers_nonsense_is_named(run_multi):
    with pytest.raises(ArgumentError, match=r"return a number or a list of numbers"):
        run_multi(two_costs, SPACE, trials=2, sampler="tpe", pruner=None, constraints=lambda m: "fine")


def test_the_magic_takes_several_metrics(client):
    from IPython.testing import globalipapp

    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_dist")
    body = (
        "import jupyter_dist as jd\nfrom jupyter_dist import space\n"
        "grid = {'x': space.uniform(0.0, 1.0)}\n"
        "def costs(x=0.5):\n    return {'a': x, 'b': 1 - x}\n"
    )
    exp = shell.run_cell_magic(
        "distribute",
        "hpo --trials 6 --metric a,b --mode min,max --sampler nsga2 --pruner none --out two",
        body,
    )
    assert exp.record.definition.objective.metrics == ("a", "b")
    assert [d.value for d in exp.record.definition.objective.directions] == ["min", "max"]
    assert len(exp.pareto) == 1  # a = x and b = 1 - x: the smallest x is best in both


# --- the Pareto arithmetic ------------------------------------------------------------------------------------------
def test_ranks_front_and_hypervolume_by_hand():
    points = [[1, 5], [2, 3], [3, 4], [4, 1], [5, 5]]  # minimised
    assert ranks(points) == [0, 0, 1, 0, 2]
    assert non_dominated(points) == [0, 1, 3]
    # reference (6, 6), the staircase (1,5) (2,3) (4,1): 5*1 + 4*2 + 2*2 = 17
    assert hypervolume(points, [6, 6]) == pytest.approx(17)
    assert hypervolume([[1, 1, 1]], [2, 3, 4]) == pytest.approx(6)  # three objectives: Optuna's WFG
    assert minimised([0.9, 20.0], [jd.Direction.MAX, jd.Direction.MIN]) == [-0.9, 20.0]


def test_every_objective_is_a_column_of_every_table(run_multi):
    import io

    from jupyter_dist.store import experiment_detail
    from jupyter_dist.widgets import TextView
    from jupyter_dist.widgets._live import LiveView

    out, views = io.StringIO(), []

    def both(exp):  # the widget's table, and the text a terminal shows
        views.append(LiveView(exp))
        return _Both(views[-1], TextView(exp, stream=out))

    exp = run_multi(two_costs, SPACE, trials=5, sampler="random", pruner=None, seed=3, progress=both)
    returned = {t.trial_id: two_costs(**t.params) for t in exp.trial_records()}
    table = exp.trials.set_index("trial_id")
    assert list(table.columns[table.columns.get_loc("value") :][:3]) == ["value", "cost_a", "cost_b"]
    for trial_id, values in returned.items():
        assert table.loc[trial_id, "cost_a"] == values["cost_a"] == table.loc[trial_id, "value"]
        assert table.loc[trial_id, "cost_b"] == values["cost_b"]
    # REST (the detail the server and the saved notebook send)
    detail = experiment_detail(jd.load(exp.name).record)
    assert {t["trial_id"]: t["values"] for t in detail["trials"]} == returned
    # the widget's trials table: a column per objective
    header = views[0].table.html.split("</thead>")[0]
    assert "<th>cost_a</th>" in header and "<th>cost_b</th>" in header
    for values in returned.values():
        assert f"<td>{values['cost_b']:.4g}</td>" in views[0].table.html
    # the text view ends with the Pareto front, every objective a column
    text = out.getvalue()
    assert f"Pareto front ({len(exp.pareto)} trials):" in text and "values_cost_b" in text


class _Both:
    def __init__(self, *views):
        self.views = views

    def start(self):
        for view in self.views:
            view.start()

    def idle(self):
        for view in self.views:
            view.idle()

    def finish(self):
        for view in self.views:
            view.finish()


def test_nsga3_by_name_prints_no_experimental_notice_into_the_cell():
    """Optuna warns that NSGA-III is experimental each time one is made: a run naming it would print that into
    its cell every time."""
    import warnings

    from jupyter_dist.search._samplers import make_sampler

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sampler = make_sampler("nsga3", {"x": space.uniform(0, 1)}, seed=0, several=True)
    assert type(sampler).__name__ == "NSGAIIISampler"
    assert [str(w.message) for w in caught] == []
