"""The live widget and the text view, driven by real experiments on the LocalCluster; assertions on trait values."""

import io
import threading
import time

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import Objective
from jupyter_dist.search import param_importances
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.widgets import TextView, view_for
from jupyter_dist.widgets._base import importances_table
from jupyter_dist.widgets._live import LiveView


def curve(lr=0.1, fail=False):
    for step in range(4):
        jd.report(step=step, acc=lr * step)
    print(f"trained with lr={lr}")
    if fail:
        raise ValueError("diverged")


def _live(views):
    def make(exp):
        views.append(LiveView(exp))
        return views[-1]

    return make


def test_the_live_view_shows_progress_best_curves_table_and_output(client):
    views = []
    exp = jd.hpo(
        curve,
        {"lr": space.choice([0.1, 0.2, 0.3]), "fail": space.choice([False, True])},
        trials=None,
        metric="acc",
        sampler="grid",
        pruner=None,  # every curve drawn whole
        cluster=client,
        progress=_live(views),
    )
    view = views[0]
    assert view.progress.value == 6 and view.progress.max == 6
    assert "6/6 done" in view.counts.value and "3 failed" in view.counts.value
    assert f"best acc={exp.best.value:.4g}" in view.stats.value and "elapsed" in view.stats.value
    assert "dashboard" in view.stats.value
    assert len(view.figure.data) == 6  # one learning curve per trial
    assert all(len(t.y) == 4 for t in view.figure.data)
    failed_traces = [t for t in view.figure.data if t.opacity < 0.5]
    assert len(failed_traces) == 3  # failed trials are dimmed
    assert view.table.html.count("<tr") == 7  # header + 6 trials
    # the output tab follows the latest failure: its print and its traceback
    assert "trained with lr=" in view.log_text.html and "ValueError: diverged" in view.log_text.html
    assert view.stop_button.disabled and view.stop_button.description == "Completed"  # says how it ended
    assert "pruned" not in view.counts.value and "running" not in view.counts.value  # no "0 pruned"
    # The trials table: the best first, parameters in the space's order (lr before fail), as the summary
    rows = view.table.html.split("<tr")[2:]
    assert f"<td>{exp.best.trial_id}</td>" in rows[0]
    assert view.table.html.index("<th>lr</th>") < view.table.html.index("<th>fail</th>")


def improving(q=0.5):
    for step in range(10):
        time.sleep(0.01)
        jd.report(step=step, acc=q * (step + 1))


def test_the_live_view_dims_pruned_trials_and_shows_the_compute_saved(client):
    views = []
    exp = jd.hpo(
        improving,
        {"q": space.choice([0.1 * k for k in range(1, 9)])},
        trials=None,
        metric="acc",
        sampler="grid",
        seed=0,
        parallel=1,
        pruner="median",
        max_steps=10,
        cluster=client,
        progress=_live(views),
    )
    view = views[0]
    c = exp.counts()
    assert c["pruned"] >= 1 and f"{c['pruned']} pruned" in view.counts.value
    assert f"compute {exp.compute()['steps']:,} steps" in view.stats.value
    assert f"{exp.compute()['saved']:.0%} of the steps saved</b> vs every trial to 10" in view.stats.value
    dimmed = [t for t in view.figure.data if t.opacity < 0.5]
    assert len(dimmed) == c["pruned"]


def test_the_stop_button_stops_the_experiment_gracefully(client):
    views = []

    def slow(x=0.0):
        for step in range(100):
            time.sleep(0.05)
            jd.report(step=step, v=x)

    def press_stop():
        while not views or not any(r.curve_values for r in views[0].exp.trial_records()):
            time.sleep(0.02)
        views[0].stop_button.click()

    threading.Thread(target=press_stop, daemon=True).start()
    exp = jd.hpo(
        slow,
        {"x": space.uniform(0, 1)},
        trials=6,
        metric="v",
        sampler="random",
        cluster=client,
        progress=_live(views),
    )
    assert exp.state == "stopped" and exp.trials.steps.max() < 100  # no trial ran to its end
    assert views[0].stop_button.description == "Stopped"  # not "Stopping…" forever


def test_the_text_view_prints_progress_failures_and_a_summary(client):
    out = io.StringIO()
    exp = jd.hpo(
        curve,
        {"lr": 0.1, "fail": space.choice([False, True])},
        trials=None,
        metric="acc",
        sampler="grid",
        cluster=client,
        progress=lambda e: TextView(e, stream=out),
    )
    text = out.getvalue()
    assert text.startswith("hpo 'curve': 2 trials on Dask")
    assert "failed: ValueError: diverged" in text
    assert text.rstrip().splitlines()[-1].startswith("hpo 'curve' completed: 2/2 trials done · 1 failed")
    assert exp.state == "completed"


def bowl(lr=0.1, width=1):
    return {"acc": -((lr - 0.3) ** 2) + width * 1e-9}


def test_an_hpo_run_ends_with_its_parameter_importances(client):
    out = io.StringIO()
    space_ = {"lr": space.uniform(0.0, 1.0), "width": space.integer(1, 4)}
    exp = jd.hpo(
        bowl,
        space_,
        trials=8,
        metric="acc",
        sampler="random",
        seed=2,
        cluster=client,
        pruner=None,
        progress=lambda e: TextView(e, stream=out),
    )
    lines = out.getvalue().rstrip().splitlines()
    expected = param_importances(exp.record)
    assert lines[-3].split() == ["parameter", "importance", "(PED-ANOVA)"]
    assert [line.split()[0] for line in lines[-2:]] == list(expected)  # most important first
    assert float(lines[-2].split()[1]) == pytest.approx(next(iter(expected.values())), abs=1e-3)
    # too few completed trials: no table (a status line ends the view, as before)
    few = jd.hpo(
        bowl, space_, trials=2, metric="acc", sampler="random", cluster=client, pruner=None, progress=False
    )
    assert importances_table(few) is None and importances_table(exp) is not None


def test_the_first_line_says_asha_decides_and_how_to_turn_it_off(client):
    note = "ASHA early stopping · pruner=None to turn it off"
    for pruner, said in (("asha", True), (None, False)):
        out, views = io.StringIO(), []

        def both(exp, out=out, views=views):
            views.append(LiveView(exp))  # the widget: drawn below, once the run has ended
            return TextView(exp, stream=out)

        options = {} if pruner == "asha" else {"pruner": None}  # the default pruner, as a user leaves it
        grid = {"lr": space.choice([0.1, 0.2])}
        jd.hpo(curve, grid, metric="acc", sampler="grid", cluster=client, progress=both, **options)
        views[0].draw()
        assert (note in out.getvalue().splitlines()[0]) is said, out.getvalue()
        assert (note in views[0].title.value) is said, views[0].title.value


def left_out(features=("a", "b"), seed=0):
    for step in range(3):
        jd.report(step=step, score=len(features) * step)


def test_an_ablation_study_shows_its_variants_and_ends_with_its_summary(client):
    views, out = [], io.StringIO()
    exp = jd.ablation(left_out, features=["a", "b"], metric="score", cluster=client, progress=_live(views))
    view = views[0]
    header = view.table.html.split("</thead>")[0]
    assert "<th>ablated</th><th>kind</th><th>repeat</th><th>state</th><th>score</th>" in header
    assert "<td>baseline</td>" in view.table.html and "<td>a, b</td>" in view.table.html
    assert f"baseline score={exp.summary()['mean'][0]:.4g} (1 run)" in view.stats.value
    assert len(view.figure.data) == 3

    jd.ablation(
        left_out,
        features=["a", "b"],
        metric="score",
        cluster=client,
        progress=lambda e: TextView(e, stream=out),
    )
    lines = out.getvalue().rstrip().splitlines()
    assert lines[-4].split() == ["component", "kind", "mean", "std", "delta", "impact", "n"]
    assert lines[-3].split()[:2] == ["baseline", "baseline"] and lines[-1].split()[0] in ("a", "b")


def test_auto_gives_text_outside_a_kernel(monkeypatch):
    exp = jd.Experiment(InMemoryRecord(ExperimentDefinition("hpo", "x", Objective("acc"))))
    monkeypatch.delenv("JUPYTER_DIST_PROGRESS", raising=False)
    assert isinstance(view_for(exp, "auto"), TextView)
    assert isinstance(view_for(exp, "widget"), LiveView)


def test_a_trial_queued_on_a_worker_reads_queued_until_it_begins():
    """A brief trial waiting behind the running one on its worker (trials/_loop.py BRIEF_TRIAL) is not shown as
    running, and uses no trial-seconds, until it begins."""
    record = InMemoryRecord(ExperimentDefinition("hpo", "x", Objective("acc")))
    record.trial_started(0, {"lr": 0.1}, {})
    record.trial_started(1, {"lr": 0.2}, {}, queued=True)
    exp = jd.Experiment(record)
    view = LiveView(exp)
    view.draw()
    assert "1 running · 1 queued" in exp.status_line()
    assert "· 1 running · 1 queued" in view.counts.value
    cells = [row.split("</td><td>") for row in view.table.html.split("<tr>")[2:]]
    assert sorted(row[1] for row in cells) == ["queued", "running"]
    at_least = time.time() - record.trial(0).started
    trial_seconds = exp.compute()["trial_seconds"]
    at_most = time.time() - record.trial(0).started
    assert at_least <= trial_seconds <= at_most  # trial 0's time so far, and none for the queued one
    began_after = time.time()
    record.trial_began(1)
    assert "2 running" in exp.status_line() and "queued" not in exp.status_line()
    assert record.trial(1).started >= began_after  # counted from when it began, not when it was sent


def climbing(lr=0.05, steps=8):
    restored = jd.restore()
    start, acc = (0, 0.0) if restored is None else (restored.step + 1, restored.state["acc"])
    for step in range(start, steps):
        acc += lr
        jd.report(step=step, acc=acc)
        jd.checkpoint(step, {"acc": acc})


def test_the_live_view_colours_a_population_by_lineage_and_draws_its_schedules(client, tmp_path):
    from jupyter_dist.population._lineage import lineage_origins
    from jupyter_dist.population._plots import lineage_colour

    views = []
    exp = jd.pbt(
        climbing,
        {"lr": space.uniform(0.01, 0.1)},
        population=3,
        metric="acc",
        max_steps=8,
        perturbation_interval=2,
        quantile=0.34,
        seed=0,
        cluster=client,
        checkpoint_dir=tmp_path,
        progress=_live(views),
    )
    view = views[0]
    assert len(exp.lineage) >= 1
    origins = lineage_origins(exp.trial_records())
    colours = {t.name: t.line.color for t in view.figure.data}
    assert colours == {
        f"trial {rec.trial_id}": lineage_colour(origins[rec.trial_id]) for rec in exp.trial_records()
    }
    assert len(set(colours.values())) < len(exp.trials)  # segments of one lineage share a colour
    assert "resumed from step" not in view.table.html  # a segment's planned start is not news
    # A tab of its own draws the lineage and the schedules (exp.plot()), as they were at the end.
    assert view.extra_title == "Lineage and schedules"
    names = {t.name for t in view.extra.data}
    assert any(n.startswith("lineage of member") for n in names) and "exploit" in names
    assert {a.text for a in view.extra.layout.annotations} >= {"lr schedule"}


def both(width=0.5):
    jd.report(step=0, acc=width**0.5, ms=10 * width)
    return {"acc": width**0.5, "ms": 10 * width}


def test_the_views_of_a_multi_objective_search_name_its_front(client):
    views = []
    exp = jd.hpo(
        both,
        {"width": space.uniform(0.0, 1.0)},
        trials=6,
        metric=["acc", "ms"],
        mode=["max", "min"],
        sampler="random",
        cluster=client,
        progress=_live(views),
    )
    assert "Pareto front: 6 trials" in views[0].stats.value  # every trial: more acc costs more ms
    assert "best acc" not in views[0].stats.value
    tab = views[0].extra  # a tab of its own: the front and the hypervolume, as at the end
    assert views[0].extra_title == "Pareto front" and {t.name for t in tab.data} >= {
        "Pareto front",
        "hypervolume",
    }
    assert len([t for t in tab.data if t.name == "Pareto front"][0].x) == 6
    text = io.StringIO()
    jd.hpo(
        both,
        {"width": space.uniform(0.0, 1.0)},
        trials=4,
        metric=["acc", "ms"],
        mode=["max", "min"],
        sampler="random",
        cluster=client,
        progress=lambda e: TextView(e, stream=text),
    )
    assert "Pareto front: 4 trials" in text.getvalue()
    assert len(exp.pareto) == 6
