"""The documentation's screenshots, taken in JupyterLab in a real browser so that they show the extension as it is
(docs/_static/screenshots/, committed: the docs build needs no browser).

A test run writes them to a temporary folder of pytest's (its path is in the shots test's captured output) and
leaves the committed ones alone. To refresh the docs' copies, run this module with
JUPYTER_DIST_REFRESH_SCREENSHOTS=1 and commit the images that changed:

    JUPYTER_DIST_REFRESH_SCREENSHOTS=1 .venv/bin/python -m pytest tests/lab/test_screenshots.py

In each theme, light and dark, a notebook runs a small HPO experiment and the test takes: the view in the cell
while it runs (live-view-<theme>.png), once it has ended (cell-view-<theme>.png), the saved notebook reopened
after its kernel was shut down (saved-notebook-<theme>.png), and the Experiments panel with the experiment opened
(panel-<theme>.png). In the light theme it also records the live view as the run goes on (live-view.gif).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from notebook_runs import CURRENT, cell_view, open_and_run_all, save_and_reopen_without_kernel, write_notebook
from playwright.sync_api import expect
from screenshots import (
    DOCS_SCREENSHOTS,
    brightness,
    frames_of,
    refreshing,
    save_animation,
    save_png,
    size,
)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    """Where this run's shots go: the docs' folder when asked to refresh it, else a temporary one."""
    return DOCS_SCREENSHOTS if refreshing() else tmp_path_factory.mktemp("screenshots")


THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
THEME_SETTING = "@jupyterlab/apputils-extension/themes"
SHOTS = ("live-view", "cell-view", "saved-notebook", "panel")
ANIMATION = "live-view.gif"
TRIALS = 16

# A realistic search in a few seconds: each trial "trains" for 20 epochs of 0.1 s and reports a noisy learning
# curve whose ceiling depends on the parameters. Two at a time, whatever the machine's cores: the run lasts long
# enough (~16 s) for the live shot and the animation.
CELL = f"""%%distribute hpo --trials {TRIALS} --parallel 2 --metric val_acc --sampler tpe --seed 3 --pruner none
import math
import random
import time

from jupyter_dist import report, space

search_space = {{
    "lr": space.loguniform(1e-4, 1e-1),
    "width": space.choice([64, 128, 256]),
    "dropout": space.uniform(0.0, 0.5),
}}


def train(lr=1e-3, width=128, dropout=0.1, epochs=20):
    noise = random.Random(f"{{lr}}{{width}}{{dropout}}")
    best_acc = 0.95 - 0.06 * (math.log10(lr) + 2.3) ** 2 - 0.4 * (dropout - 0.15) ** 2
    best_acc -= 0.03 * (width == 64)
    pace = 1 + 4 * (-1 - math.log10(lr)) / 3  # epochs to learn: fewer at a higher lr
    for epoch in range(epochs):
        time.sleep(0.1)  # an epoch's work
        val_acc = best_acc * (1 - math.exp(-(epoch + 1) / pace)) + noise.gauss(0, 0.01)
        report(step=epoch, val_acc=val_acc, loss=-math.log(max(val_acc, 0.05)))
    return {{"val_acc": val_acc}}
"""

# The window the page shots are taken in; the view's own shots, of a view taller than that, in a taller one.
WINDOW = {"width": 1280, "height": 800}
TALL_WINDOW = {"width": 1280, "height": 2400}
# The room (px, of the view's background) around the view in its shots, so that its text does not touch the edge.
MARGIN = 12
# The animation: the top of the view (its header, best trial, learning curves and objective by trial) as often as
# FRAME_EVERY_MS while the run goes on (the view draws anew every second), then the ended run.
FRAME_EVERY_MS = 250
# The live shot is taken once this many trials have ended.
LIVE_AT = TRIALS // 2

# What the view in the experiment's cell (code cell 1) says, read in one go.
VIEW_STATE = """(current) => {
  const panel = document.querySelector(current);
  const cell = panel && panel.querySelectorAll('.jp-Notebook .jp-CodeCell')[1];
  const view = cell && cell.querySelector('.jd-cell-view');
  const state = view && view.querySelector('.jd-detail-header .jd-state');
  const meta = view && view.querySelector('.jd-detail-header .jd-detail-meta');
  const prompt = cell ? cell.querySelector('.jp-InputPrompt').innerText : '';
  return {
    ran: /[0-9]/.test(prompt) && !prompt.includes('*'),
    state: state ? state.innerText : null,
    progress: meta ? meta.innerText : '',
    curves: !!(view && view.querySelector('.jd-chart canvas')),
    stop: !!(view && view.querySelector('.jd-stop'))
  };
}"""


def view_state(page) -> dict:
    return page.evaluate(VIEW_STATE, CURRENT)


def trials_ended(state: dict) -> int:
    found = re.match(r"(\d+)/", state["progress"])
    return int(found.group(1)) if found else 0


def rest_the_mouse(page) -> None:
    """The mouse out of the shots' way: on the status bar, over nothing that reacts to it."""
    page.mouse.move(600, page.viewport_size["height"] - 10)


def shot(view) -> bytes:
    """A screenshot of ``view`` (transitions ended: a button being redrawn is shown as it will be, not half faded
    in)."""
    return view.screenshot(animations="disabled")


def frame(page, view) -> bytes:
    """A frame of the animation: the top of ``view``, down to its objective chart (its legend included)."""
    top, bottom = view.bounding_box(), view.locator(".jd-objective").bounding_box()
    clip = {
        "x": top["x"],
        "y": top["y"],
        "width": top["width"],
        "height": bottom["y"] + bottom["height"] - top["y"],
    }
    assert clip["y"] + clip["height"] <= page.viewport_size["height"], (clip, page.viewport_size)
    return page.screenshot(clip=clip, animations="disabled")


def follow_the_run(page, view, theme: str, animate: bool, folder: Path) -> list[bytes]:
    """Until the run ends: the live shot of the whole view once LIVE_AT trials have ended, and (``animate``) the
    frames of the animation. A shot is kept only when the view said "running" (and offered Stop) both before and
    after it was taken."""
    frames: list[bytes] = []
    live = None
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, f"the run did not end: {view_state(page)}"
        before = view_state(page)
        if before["state"] not in (None, "running") or before["ran"]:
            break
        if before["state"] == "running" and before["curves"]:
            taken = frame(page, view) if animate else None
            whole = shot(view) if live is None and trials_ended(before) >= LIVE_AT else None
            after = view_state(page)
            if after["state"] == "running" and after["stop"]:
                if taken is not None:
                    frames.append(taken)
                if whole is not None:
                    live = save_png(whole, folder / f"live-view-{theme}.png", MARGIN)
        page.wait_for_timeout(FRAME_EVERY_MS)
    assert live is not None, "the live view was never shot while it ran"
    return frames


@pytest.mark.parametrize(
    ("theme", "lab"),
    [(theme, {THEME_SETTING: {"theme": name}}) for theme, name in THEMES.items()],
    ids=list(THEMES),
    indirect=["lab"],
)
def test_screenshots_of_a_run_in_the_cell_the_saved_notebook_and_the_panel(theme, lab, page, screenshots):
    started = time.time()  # every image is written again (a failed run leaves the last ones as they were)
    print(f"screenshots in {screenshots}")
    screenshots.mkdir(parents=True, exist_ok=True)
    animation = screenshots / ANIMATION
    animate = theme == "light"
    page.set_viewport_size(TALL_WINDOW)
    write_notebook(lab.root / "tune.ipynb", CELL)
    open_and_run_all(lab, page, "tune.ipynb")
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", THEMES[theme])
    rest_the_mouse(page)
    view = cell_view(page, 1)

    # While it runs, then once it has ended (the kernel's final view: every trial, the importances).
    frames = follow_the_run(page, view, theme, animate, screenshots)
    expect(view.locator(".jd-detail-header .jd-state")).to_have_text("completed", timeout=30_000)
    expect(view.locator(".jd-detail-header .jd-detail-meta").first).to_contain_text(
        f"{TRIALS}/{TRIALS} trials"
    )
    expect(view.locator(".jd-stop")).to_have_count(0)
    expect(view.locator(".jd-best")).to_contain_text("best val_acc=")
    expect(view.locator(".jd-table tbody tr")).to_have_count(TRIALS)
    expect(view.locator(".jd-parallel svg path")).to_have_count(TRIALS)
    expect(view.locator(".jd-importances h3")).to_contain_text(f"{TRIALS} completed trials")
    page.wait_for_timeout(300)  # the charts' last draw
    save_png(shot(view), screenshots / f"cell-view-{theme}.png", MARGIN)
    if animate:
        frames.append(frame(page, view))
        save_animation(frames, animation, MARGIN)

    # The saved notebook, opened again once its kernel was shut down: the view drawn from what the notebook
    # saved (JupyterLab starts a new kernel for it, which has run nothing).
    page.set_viewport_size(WINDOW)
    save_and_reopen_without_kernel(lab, page, "tune.ipynb")
    view = cell_view(page, 1)
    expect(view.locator(".jd-detail-header .jd-state")).to_have_text("completed", timeout=30_000)
    expect(view.locator(".jd-chart canvas").first).to_be_visible()
    expect(page.locator(".jp-DirListing-item[title^='Name: tune.ipynb']")).to_be_visible()
    # The notebook's JSON has its keys sorted; the view lists the parameters in the space's order all the same.
    headers = view.locator(".jd-table thead th").all_inner_texts()
    assert [h for h in headers if h in ("lr", "width", "dropout")] == ["lr", "width", "dropout"], headers
    expect(view.locator(".jd-best")).to_contain_text(re.compile(r"lr=\S+, width=\S+, dropout="))
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=30_000)
    page.locator(f"{CURRENT} .jp-Notebook .jp-CodeCell").nth(1).evaluate("cell => cell.scrollIntoView()")
    rest_the_mouse(page)
    page.wait_for_timeout(300)
    save_png(page.screenshot(animations="disabled"), screenshots / f"saved-notebook-{theme}.png")

    # The Experiments panel, the experiment opened from it.
    lab.open_panel(page)
    item = page.locator(".jd-item")
    expect(item).to_have_count(1)
    expect(item).to_contain_text(f"{TRIALS}/{TRIALS} trials")
    item.click()
    detail = page.locator(".jd-detail")
    expect(detail.locator(".jd-detail-name")).to_have_text("hpo train")
    expect(detail.locator(".jd-detail-header .jd-state")).to_have_text("completed")
    expect(detail.locator(".jd-chart canvas").first).to_be_visible()
    expect(detail.locator(".jd-best")).to_contain_text("best val_acc=")
    rest_the_mouse(page)
    page.wait_for_timeout(300)
    save_png(page.screenshot(animations="disabled"), screenshots / f"panel-{theme}.png")
    assert not page.errors

    # Written now, small, of the size they should be, and not blank.
    for name in SHOTS:
        path = screenshots / f"{name}-{theme}.png"
        assert path.stat().st_mtime >= started and path.stat().st_size < 400_000, path
        width, height = size(path)
        if name in ("saved-notebook", "panel"):
            assert (width, height) == (WINDOW["width"], WINDOW["height"]), (path, width, height)
        else:  # the whole view: its header, charts, importances, table of trials and output
            assert 700 < width < WINDOW["width"] and 1000 < height < TALL_WINDOW["height"], (
                path,
                width,
                height,
            )
        mean, spread = brightness(path)
        assert spread > 20, (path, mean, spread)
    if animate:
        assert animation.stat().st_mtime >= started and animation.stat().st_size < 1_500_000
        width, height = size(animation)
        assert 700 < width < WINDOW["width"] and 400 < height < 1000, (width, height)
        assert len(set(frames_of(animation))) >= 12


def test_the_dark_screenshots_are_dark_and_the_animation_moves(screenshots):
    """After the shots in both themes (or, when they were not all taken in this run, on those committed): the dark
    theme's shots are dark and the light theme's light, and the animation shows the run progress (many different
    frames)."""
    names = [f"{name}-{theme}.png" for name in SHOTS for theme in THEMES] + [ANIMATION]
    folder = screenshots if all((screenshots / name).exists() for name in names) else DOCS_SCREENSHOTS
    for name in SHOTS:
        light, _ = brightness(folder / f"{name}-light.png")
        dark, _ = brightness(folder / f"{name}-dark.png")
        assert light > 180 and dark < 90, (folder, name, light, dark)
    frames = frames_of(folder / ANIMATION)
    assert len(set(frames)) >= 12, len(set(frames))
