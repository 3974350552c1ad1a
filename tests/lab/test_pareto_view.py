"""A search with several objectives in JupyterLab, in a real browser: the view in the cell draws the Pareto front
(two objectives: a scatter with the front's staircase) and the hypervolume, names no single best trial, and lists
every objective in the trials table; the saved notebook reopened without a kernel draws the same."""

from notebook_runs import (
    cell_view,
    open_and_run_all,
    save_and_reopen_without_kernel,
    saved_view_of,
    write_notebook,
)
from playwright.sync_api import expect

TWO = """%%distribute hpo --trials 16 --metric acc,ms --mode max,min --sampler nsga2 --pruner none --seed 0
import time
from jupyter_dist import report, space
sp = {"width": space.uniform(0.0, 1.0)}
def tradeoff(width=0.5):
    time.sleep(0.1)
    return {"acc": width ** 0.5, "ms": 10 * width + 1}
"""


def test_the_cell_view_draws_the_front_and_the_hypervolume(lab, page):
    write_notebook(lab.root / "pareto.ipynb", TWO)
    open_and_run_all(lab, page, "pareto.ipynb")
    view = cell_view(page, 1)
    expect(view.locator(".jd-state")).to_have_text("completed", timeout=120_000)
    # acc grows with width and so does ms: every trial is on the front.
    expect(view.locator(".jd-pareto h3").first).to_have_text("Pareto front: 16 of 16 completed trials")
    expect(view.locator(".jd-front .jd-front-point")).to_have_count(16)
    expect(view.locator(".jd-front .jd-front-line")).to_have_count(1)
    expect(view.locator(".jd-hypervolume canvas")).to_have_count(1)
    expect(view.locator(".jd-best")).to_be_empty()  # no one best trial
    expect(view.locator(".jd-objective")).to_be_hidden()
    head = view.locator(".jd-table thead")
    expect(head).to_contain_text("acc")
    expect(head).to_contain_text("ms")
    save_and_reopen_without_kernel(lab, page, "pareto.ipynb")
    saved = saved_view_of(lab, "pareto.ipynb", 1)
    assert saved["snapshot"]["definition"]["objectives"] == [["acc", "max"], ["ms", "min"]]
    reopened = cell_view(page, 1)
    expect(reopened.locator(".jd-front .jd-front-point")).to_have_count(16, timeout=30_000)
    assert not page.errors
