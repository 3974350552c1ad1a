"""The Experiments panel, status-bar item, commands and theme, in JupyterLab in a real browser."""

import subprocess
import sys
import threading
import time

from playwright.sync_api import expect

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.search import param_importances


def train(lr=0.1, width=8):
    for step in range(3):
        jd.report(step=step, acc=lr * (step + 1) + width / 100)
    return {"acc": lr * 3 + width / 100}


def slow_train(lr=0.1):
    import time

    for step in range(10):
        jd.report(step=step, acc=lr * step)
        time.sleep(0.3)
    return {"acc": lr * 10}


SPACE = {"lr": space.uniform(0.01, 0.3), "width": space.choice([8, 16, 32])}


def test_the_extension_is_installed_and_enabled():
    listed = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True, check=True
    )
    line = next(line for line in (listed.stdout + listed.stderr).splitlines() if "jupyter-dist" in line)
    assert "enabled" in line and "OK" in line


def test_the_panel_lists_stored_and_running_experiments_live(lab, page, run_hpo):
    done = run_hpo(train, SPACE, trials=4, metric="acc")  # stored before the page opens
    lab.open(page)
    lab.open_panel(page)
    item = page.locator(f".jd-item[data-id='{done.id}']")
    expect(item).to_contain_text("train")
    expect(item).to_contain_text("completed")
    expect(item).to_contain_text("4/4 trials")
    expect(item).to_contain_text("best acc")

    running = {}
    thread = threading.Thread(
        target=lambda: running.setdefault(
            "exp", run_hpo(slow_train, {"lr": space.uniform(0.01, 0.3)}, trials=4, parallel=2, metric="acc")
        )
    )
    thread.start()
    try:
        newest = page.locator(".jd-item").first
        expect(newest).to_contain_text("slow_train", timeout=20_000)
        expect(newest).to_contain_text("running")
        # The status bar says what runs; a click on it opens the panel.
        status = page.locator("#jp-main-statusbar .jd-status")
        expect(status).to_contain_text("hpo slow_train: ", timeout=10_000)
    finally:
        thread.join(120)
    expect(newest).to_contain_text("completed", timeout=15_000)
    expect(newest).to_contain_text("4/4 trials")
    expect(page.locator("#jp-main-statusbar .jd-status")).to_be_hidden()  # nothing runs any more
    assert not page.errors


def test_opening_an_experiment_shows_best_trial_first_curves_and_output(lab, page, run_hpo):
    exp = run_hpo(train, SPACE, trials=5, metric="acc")
    best = exp.best
    lab.open(page)
    lab.open_panel(page)
    page.locator(f".jd-item[data-id='{exp.id}']").click()
    detail = page.locator(".jd-detail")
    expect(detail.locator(".jd-detail-name")).to_have_text("hpo train")
    expect(detail.locator(".jd-best")).to_contain_text(f"(trial {best.trial_id})")
    rows = detail.locator(".jd-table tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_have_attribute("data-trial", str(best.trial_id))
    expect(rows.first).to_have_class("jd-best-row")
    # Parameters in the search space's order, as the summary writes them.
    expect(detail.locator(".jd-table thead th")).to_have_text(
        ["trial", "state", "acc", "lr", "width", "steps", "duration"]
    )
    expect(detail.locator(".jd-chart canvas")).to_have_count(2)  # learning curves, objective by trial
    # What the trials used: a chart per measure, or (trials this brief end before their first sample) why none.
    usage = detail.locator(".jd-usage")
    if len(exp.utilization):
        expect(usage.locator(".jd-usage-chart canvas")).to_have_count(2)  # CPU, RSS (no GPU here)
    else:
        expect(usage).to_contain_text("No utilisation samples: trials shorter than about a second have none.")
    # Parallel coordinates: the searched parameters in the space's order, then the objective; a line per trial
    parallel = detail.locator(".jd-parallel svg")
    expect(parallel.locator(".jd-parallel-title")).to_have_text(["lr", "width", "acc"])
    expect(parallel.locator("path")).to_have_count(int((exp.trials.state == "completed").sum()))
    expect(parallel.locator(".jd-parallel-best")).to_have_attribute("data-trial", str(best.trial_id))
    # A column header sorts by it (ascending, then descending, then best first again).
    detail.locator(".jd-table thead th", has_text="lr").click()
    lrs = [float(v) for v in detail.locator(".jd-table tbody tr td:nth-child(4)").all_inner_texts()]
    assert lrs == sorted(lrs)
    detail.locator(".jd-table thead th", has_text="lr").click()
    detail.locator(".jd-table thead th", has_text="lr").click()
    expect(rows.first).to_have_attribute("data-trial", str(best.trial_id))
    rows.nth(1).click()
    trial_id = int(rows.nth(1).get_attribute("data-trial"))
    expect(detail.locator(".jd-output")).to_contain_text("printed nothing")
    assert trial_id != best.trial_id
    assert not page.errors


def conditional_space(trial):
    optimizer = trial.suggest_categorical("optimizer", ["sgd", "adam"])
    if optimizer == "sgd":
        trial.suggest_float("momentum", 0.0, 0.9)
    trial.suggest_float("lr", 0.01, 0.3)


def tuned(optimizer, lr, momentum=None):
    return {"acc": lr * 10 + (momentum or 0) * 0.01}


def test_a_define_by_run_search_shows_its_parameters_and_their_importances(lab, page, run_hpo):
    exp = run_hpo(tuned, conditional_space, trials=8, metric="acc", seed=1)
    lab.open(page)
    lab.open_panel(page)
    page.locator(f".jd-item[data-id='{exp.id}']").click()
    detail = page.locator(".jd-detail")
    # Its definition keeps no space: the axes are the parameters its trials were given, then the objective
    titles = detail.locator(".jd-parallel svg .jd-parallel-title")
    expect(titles).to_have_count(4)
    assert sorted(titles.all_text_contents()[:3]) == ["lr", "momentum", "optimizer"]
    # The server's importances (the same as the kernel's), most important first
    expected = param_importances(jd.load(exp.name).record)
    expect(detail.locator(".jd-importances h3")).to_contain_text("PED-ANOVA, 8 completed trials")
    expect(detail.locator(".jd-importance-name")).to_have_text(list(expected))
    shares = [float(t.rstrip("%")) for t in detail.locator(".jd-importance-share").all_inner_texts()]
    assert shares == sorted(shares, reverse=True) and abs(sum(shares) - 100) < 1
    assert not page.errors


def flagged(features=("a", "b", "c"), seed=0):
    score = 1.0 + ("a" in features) * 2.0 + ("b" in features) * 0.5
    jd.report(step=0, score=score)
    return {"score": score}


def test_an_ablation_study_shows_each_components_impact_as_bars(lab, page, run_ablation):
    exp = run_ablation(flagged, features=["a", "b", "c"], metric="score", mode="max")
    lab.open(page)
    lab.open_panel(page)
    page.locator(f".jd-item[data-id='{exp.id}']").click()
    bars = page.locator(".jd-detail .jd-ablation-row")
    # the baseline first, then by impact as summary() ranks them: a (2.0), b (0.5), c (0)
    expect(bars).to_have_count(4)
    assert [bars.nth(i).get_attribute("data-component") for i in range(4)] == list(exp.summary().component)
    expect(bars.nth(1)).to_contain_text("+2")
    widths = [float(bars.nth(i).locator(".jd-bar").evaluate("el => el.style.width")[:-1]) for i in (1, 2)]
    assert widths[0] == 100 and 20 < widths[1] < 30  # drawn to scale
    expect(page.locator(".jd-detail .jd-objective")).to_be_hidden()  # no objective chart for a study
    assert not page.errors


def fit(n=3):
    jd.report(step=0, loss=1.0 / n)
    return {"weights": [jd.rank()] * n}


def test_a_data_parallel_run_shows_rank_0s_result(lab, page, run_ddp):
    run = run_ddp(fit, workers=2, n=3)
    lab.open(page)
    lab.open_panel(page)
    page.locator(f".jd-item[data-id='{run.id}']").click()
    detail = page.locator(".jd-detail")
    expect(detail.locator(".jd-result")).to_contain_text("{'weights': [0, 0, 0]}")
    expect(detail.locator(".jd-best")).to_be_empty()  # nothing was optimised: no "best" to show
    # the dashboard link reads as a link: the theme's link colour, underlined. Both read in one script: the view
    # redraws its header when the curves arrive, and a style read from a node replaced meanwhile is empty (a
    # fresh-clone CI run read ['', ''] from two separate reads).
    expect(detail.locator("a.jd-dashboard")).to_be_visible()
    link, underline, text = page.evaluate(
        """() => {
            const style = selector => getComputedStyle(document.querySelector(`.jd-detail ${selector}`));
            const link = style('a.jd-dashboard');
            return [link.color, link.textDecorationLine, style('.jd-detail-name').color];
        }"""
    )
    assert link and text and link != text and underline == "underline", (link, underline, text)
    assert not page.errors


def test_palette_commands_and_the_dark_theme(lab, page, run_hpo):
    run_hpo(train, SPACE, trials=1, metric="acc")
    lab.open(page)
    page.keyboard.press("Control+Shift+c")
    palette = page.locator(".lm-CommandPalette")
    palette.locator("input").fill("Experiments")
    expect(palette.locator(".lm-CommandPalette-item")).to_contain_text(
        ["Experiments: Open Panel", "Experiments: Refresh"]
    )
    # Chosen by typing, as a keyboard user does: the palette redraws its items while JupyterLab still adds
    # commands, and a click on a loaded machine kept landing on an item just replaced (detached from the DOM).
    palette.locator("input").fill("Experiments: Open Panel")
    expect(palette.locator(".lm-CommandPalette-item.lm-mod-active")).to_contain_text(
        "Experiments: Open Panel"
    )
    palette.locator("input").press("Enter")
    panel = page.locator("#jupyter-dist-experiments")
    expect(panel.locator(".jd-item")).to_have_count(1)

    def panel_luminance() -> float:
        rgb = panel.evaluate("el => getComputedStyle(el).backgroundColor")
        r, g, b = (int(v) for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

    assert panel_luminance() > 0.8
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=15_000)
    for _ in range(50):
        if panel_luminance() < 0.3:
            break
        page.wait_for_timeout(100)
    assert panel_luminance() < 0.3
    assert not page.errors


def test_the_refresh_interval_setting_changes_how_often_the_panel_asks(lab, page):
    asked: list[float] = []
    page.on(
        "request",
        lambda request: (
            asked.append(time.monotonic())
            if request.url.split("?")[0].endswith("/jupyter-dist/api/experiments")
            else None
        ),
    )

    def requests_in(seconds: float) -> int:
        start = time.monotonic()
        page.wait_for_timeout(seconds * 1000)
        return sum(start <= t for t in asked)

    lab.open(page)
    lab.open_panel(page)
    at_default = requests_in(6)  # every 2 s
    # As a user would: the Settings Editor's form, which saves as it is edited.
    page.evaluate("window.jupyterapp.commands.execute('settingeditor:open', {query: 'Experiments'})")
    field = page.locator("input[id*='refreshInterval']")  # the form's field (its label is not tied to it)
    field.fill("0.5")
    field.press("Tab")
    page.wait_for_timeout(2000)  # the editor's save, then the poll's next tick
    at_half_second = requests_in(6)
    assert at_default <= 4 and at_half_second >= 8, (at_default, at_half_second)
    assert not page.errors
