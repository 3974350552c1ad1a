"""A population-based-training run in JupyterLab, in a real browser: the view in the cell draws each member's
hyperparameter schedule and its segments' curves, live and in the saved notebook reopened without a kernel."""

from notebook_runs import (
    cell_view,
    open_and_run_all,
    save_and_reopen_without_kernel,
    saved_view_of,
    write_notebook,
)
from playwright.sync_api import expect

import jupyter_dist as jd

PBT = """%%distribute pbt --population 3 --metric acc --max-steps 12 --perturbation-interval 3 --seed 0
import time
import jupyter_dist as jd
from jupyter_dist import space
rates = {"lr": space.uniform(0.01, 0.1)}
def climb(lr=0.05, steps=12):
    restored = jd.restore()
    start, acc = (0, 0.0) if restored is None else (restored.step + 1, restored.state["acc"])
    for step in range(start, steps):
        time.sleep(0.05)
        acc += lr
        jd.report(step=step, acc=acc)
        jd.checkpoint(step, {"acc": acc})
"""


def test_the_cell_view_draws_the_schedules_and_keeps_them_saved(lab, page):
    write_notebook(lab.root / "pbt.ipynb", PBT)
    open_and_run_all(lab, page, "pbt.ipynb")
    view = cell_view(page, 1)
    expect(view.locator(".jd-state")).to_have_text("completed", timeout=120_000)
    expect(view.locator(".jd-detail-name")).to_have_text("pbt climb")
    schedules = view.locator(".jd-schedules")
    expect(schedules.locator("h3")).to_have_text("Hyperparameter schedules (member by member)")
    expect(schedules.locator(".jd-schedule canvas")).to_have_count(1)
    legend = schedules.locator(".jd-schedule .u-legend")
    for member in range(3):
        expect(legend).to_contain_text(f"member {member}")
    expect(view.locator(".jd-chart").first.locator("canvas")).to_have_count(1)  # the segments' curves
    # The table lists the segments with their member and what each went on from.
    expect(view.locator(".jd-table thead")).to_contain_text("member")
    expect(view.locator(".jd-table thead")).to_contain_text("from_step")
    save_and_reopen_without_kernel(lab, page, "pbt.ipynb")
    saved = saved_view_of(lab, "pbt.ipynb", 1)
    segments = len(saved["snapshot"]["trials"])
    # Every segment the run recorded is in the saved view, each with its curve. How many there are depends on
    # timing (PBT is asynchronous: a member that copies one further on skips the segments between), but each of
    # the 3 members went on past its first.
    assert segments == len(jd.load("climb").trial_records()) > 3
    assert len(saved["curves"]["trials"]) == segments
    reopened = cell_view(page, 1)
    expect(reopened.locator(".jd-schedules .jd-schedule canvas")).to_have_count(1, timeout=30_000)
    expect(reopened.locator(".jd-schedules .u-legend")).to_contain_text("member 2")
    assert not page.errors
