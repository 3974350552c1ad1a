"""Several experiments picked in the Experiments panel and compared side by side, in JupyterLab in a real browser:
the comparison jupyter_dist.compare() makes in the notebook, and the docs' screenshots of it
(docs/_static/screenshots/compare-<theme>.png; rewritten only with JUPYTER_DIST_REFRESH_SCREENSHOTS=1, as
test_screenshots.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect
from screenshots import DOCS_SCREENSHOTS, brightness, refreshing, save_png, size

import jupyter_dist as jd
from jupyter_dist import space

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
THEME_SETTING = "@jupyterlab/apputils-extension/themes"
WINDOW = {"width": 1280, "height": 800}  # as the panel's shots (test_screenshots.py)
TRIALS = 24
SPACE = {
    "lr": space.loguniform(1e-4, 1e-1),
    "width": space.choice([64, 128, 256]),
    "dropout": space.uniform(0.0, 0.5),
}


def train(lr=1e-3, width=128, dropout=0.1):
    import math
    import time

    time.sleep(0.05)  # some work: the wall-time chart's axis in seconds, not milliseconds
    acc = 0.95 - 0.06 * (math.log10(lr) + 2.3) ** 2 - 0.4 * (dropout - 0.15) ** 2 - 0.03 * (width == 64)
    jd.report(step=0, val_acc=acc)
    return {"val_acc": acc}


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    """Where this run's shots go: the docs' folder when asked to refresh it, else a temporary one."""
    return DOCS_SCREENSHOTS if refreshing() else tmp_path_factory.mktemp("screenshots")


def searches(run_hpo) -> list:
    """Two stored searches of one space, the newest first (as the panel lists them)."""
    common = {"trials": TRIALS, "metric": "val_acc", "pruner": None}
    random = run_hpo(train, SPACE, sampler="random", name="random", seed=1, **common)
    tpe = run_hpo(train, SPACE, sampler="tpe", name="tpe", seed=3, **common)
    return [tpe, random]


@pytest.mark.parametrize(
    ("theme", "lab"),
    [(theme, {THEME_SETTING: {"theme": name}}) for theme, name in THEMES.items()],
    ids=list(THEMES),
    indirect=["lab"],
)
def test_experiments_picked_in_the_panel_open_side_by_side(theme, lab, page, run_hpo, screenshots):
    newest, older = searches(run_hpo)
    stray = run_hpo(train, SPACE, trials=2, metric="val_acc", name="stray")  # listed first, never compared
    page.set_viewport_size(WINDOW)
    lab.open(page)
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", THEMES[theme])
    lab.open_panel(page)
    panel = page.locator("#jupyter-dist-experiments")
    items = panel.locator(".jd-item")
    expect(items).to_have_count(3, timeout=20_000)
    button = panel.locator(".jd-compare")
    expect(button).to_be_disabled()

    # As in the file browser: a click picks one (and opens it), Shift-click the rows down to another, and
    # Ctrl-click (or its checkbox) takes one out again.
    item = {exp.id: panel.locator(f".jd-item[data-id='{exp.id}']") for exp in (stray, newest, older)}
    item[stray.id].click()
    expect(page.locator(".jd-detail .jd-detail-name")).to_have_text("hpo stray", timeout=20_000)
    item[older.id].click(modifiers=["Shift"])
    expect(panel.locator(".jd-item-picked")).to_have_count(3)
    expect(button).to_have_text("Compare 3")
    item[stray.id].click(modifiers=["Control"])
    expect(button).to_have_text("Compare 2")
    item[newest.id].locator(".jd-pick").click()
    expect(button).to_be_disabled()
    item[newest.id].locator(".jd-pick").click()
    expect(panel.locator(".jd-item-picked")).to_have_count(2)
    expect(panel.locator(".jd-item-picked .jd-pick:checked")).to_have_count(2)
    button.click()

    view = page.locator(".jd-comparison")
    rows = view.locator(".jd-compare-table tbody tr")
    expect(rows).to_have_count(2, timeout=20_000)
    summary = jd.compare(newest, older).summary
    expect(view.locator(".jd-compare-table thead th")).to_have_text(list(summary.columns))
    for index, exp in enumerate((newest, older)):
        row = rows.nth(index)
        expect(row).to_have_attribute("data-id", exp.id)
        cells = row.locator("td")
        expect(cells.nth(0)).to_have_text(exp.name)
        expect(cells.nth(3)).to_have_text(str(TRIALS))
        assert float(cells.nth(4).inner_text()) == pytest.approx(exp.best.value, rel=1e-3)
        expect(cells.nth(5)).to_contain_text(f"lr={exp.best.params['lr']:.4g}")
    # One line per experiment in each chart (uPlot's legend: the x axis's entry, then a series each), and each
    # run's importances beside the other's.
    for chart, x_label in ((".jd-compare-by-trial", "completed trials"), (".jd-compare-by-time", "seconds")):
        expect(view.locator(f"{chart} canvas")).to_be_visible(timeout=20_000)
        labels = view.locator(f"{chart} .u-legend .u-series .u-label")
        expect(labels).to_have_count(3)
        assert labels.all_inner_texts()[1:] == ["tpe", "random"], labels.all_inner_texts()
        assert labels.first.inner_text().startswith(x_label)
    columns = view.locator(".jd-compare-importance")
    expect(columns).to_have_count(2)
    expect(columns.locator(".jd-importance-name")).to_have_count(2 * len(SPACE))
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
    expect(tab).to_contain_text("Compare tpe, random")
    assert not page.errors

    # The docs' shot: the panel with the two picked, the comparison beside it.
    page.mouse.move(600, WINDOW["height"] - 10)  # on the status bar, over nothing that reacts to it
    expect(view.locator(".jd-compare-by-time canvas")).to_be_in_viewport()
    path = save_png(page.screenshot(animations="disabled"), screenshots / f"compare-{theme}.png")
    assert size(path) == (WINDOW["width"], WINDOW["height"]) and path.stat().st_size < 400_000
    mean, spread = brightness(path)
    assert spread > 20 and (mean > 180 if theme == "light" else mean < 90), (path, mean, spread)
