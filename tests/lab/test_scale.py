"""The views at the size issues 26 and 44 ask for, in JupyterLab in a real browser: an experiment of 10,000 trials x
100 reports (1M) opens from the Experiments panel and in a reopened notebook's cell, with a bounded number of table
rows in the page, and its trials table scrolls to the last trial listed; one of 100,000 trials opens in the panel
within seconds, listing its first page and reading the next with "Load more"."""

import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from big_experiment import write_experiment, write_notebook
from playwright.sync_api import expect

from jupyter_dist.store import StoreReader
from jupyter_dist.store._reader import TRIALS_PAGE
from jupyter_dist.widgets._lab import MIME_TYPE, SNAPSHOT_TRIALS

TRIALS, STEPS = 10_000, 100
# Measured on a 2-core machine busy with other work (bench_lab, the detail paged): the panel's table 0.2 s, its
# curves about 1 s, the reopened cell about 0.9 s; with every trial in the detail, 0.9-1.1 s, 7-9 s and 2-4.6 s.
# The bounds leave a loaded CI machine room.
OPEN_S, CURVES_S, CELL_S = 15, 40, 30
# The rows in view (~18 in a 400 px box) and a margin of 30 each side.
MAX_ROWS = 100


@pytest.fixture
def big(fresh_store, tmp_path):
    """The experiment and its saved notebook, written while JupyterLab starts (the ``lab`` fixture after this
    one): its id, and the notebook's path."""

    def build():
        record = write_experiment(fresh_store, TRIALS, STEPS)
        write_notebook(record, tmp_path / "big.ipynb")
        return record.definition.id, tmp_path / "big.ipynb"

    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(build)


def open_within(page, scope: str, seconds: float) -> None:
    """Until the trials table of ``scope`` shows (a TimeoutError past ``seconds``)."""
    page.wait_for_selector(f"{scope} .jd-table tbody tr", timeout=seconds * 1000)


def check_the_table(page, scope: str, heading: str, trial_ids: list[int]) -> None:
    """Bounded rows under ``heading``, and, sorted by id, the first of ``trial_ids`` on top and the last reached by
    scrolling."""
    view = page.locator(scope)
    expect(view.locator("h3", has_text=re.compile("^Trials"))).to_have_text(heading)
    rows = view.locator(".jd-table tbody tr")
    assert 10 < rows.count() <= MAX_ROWS, rows.count()
    view.locator(".jd-table thead th", has_text="trial").first.click()
    expect(rows.first).to_have_attribute("data-trial", str(min(trial_ids)))
    view.locator(".jd-trials").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    expect(rows.last).to_have_attribute("data-trial", str(max(trial_ids)))
    assert rows.count() <= MAX_ROWS, rows.count()


def saved_trials(notebook) -> list[int]:
    """The trials whose summaries the notebook's cell saved (the best SNAPSHOT_TRIALS of a larger run)."""
    (output,) = nbformat.read(notebook, as_version=4).cells[0].outputs
    return [t["trial_id"] for t in output["data"][MIME_TYPE]["snapshot"]["trials"]]


def test_an_experiment_of_10000_trials_and_1m_reports_opens_in_the_panel_and_the_cell(
    big, lab, page, fresh_store
):
    lab.open(page)
    experiment_id, notebook = big.result(timeout=180)
    shutil.copy(notebook, lab.root / "big.ipynb")
    lab.open_panel(page)

    page.locator(f".jd-item[data-id='{experiment_id}']").click()
    open_within(page, ".jd-detail", OPEN_S)
    page.wait_for_selector(".jd-detail .jd-chart:not(.jd-objective) canvas", timeout=CURVES_S * 1000)
    # The detail lists its first page, best first (GET .../trials the next ones).
    listed = [t["trial_id"] for t in StoreReader(fresh_store).detail(experiment_id)["trials"]]
    check_the_table(page, ".jd-detail", f"Trials: {TRIALS_PAGE:,} of {TRIALS:,} listed, best first", listed)

    # Not awaited: the command's promise settles once the notebook has loaded, the first part of what is timed.
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:open', {path: 'big.ipynb'}); }")
    open_within(page, ".jd-cell-view", CELL_S)
    expect(page.locator(".jd-cell-view .jd-chart:not(.jd-objective) canvas")).to_have_count(1)
    saved = saved_trials(notebook)
    assert (
        len(saved) == SNAPSHOT_TRIALS < TRIALS
    )  # a notebook of 10,000 trials' summaries took 2.1-2.5 s to open
    heading = f"Trials: {SNAPSHOT_TRIALS:,} of {TRIALS:,} listed, best first"
    check_the_table(page, ".jd-cell-view", heading, saved)
    assert not page.errors


BIG_TRIALS = 100_000
# Issue 44's target, measured by bench_lab (a quiet machine): the panel's table within 2 s of the click. The
# bound leaves a loaded 2-core CI machine room.
BIG_OPEN_S = 10


@pytest.fixture
def bigger(fresh_store):
    """An ended run of 100,000 trials of one report each, written while JupyterLab starts: its id."""
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(lambda: write_experiment(fresh_store, BIG_TRIALS, 1, name="bigger").definition.id)


def test_an_experiment_of_100000_trials_opens_in_the_panel_a_page_at_a_time(bigger, lab, page, fresh_store):
    lab.open(page)
    experiment_id = bigger.result(timeout=300)
    lab.open_panel(page)
    page.locator(f".jd-item[data-id='{experiment_id}']").click()
    open_within(page, ".jd-detail", BIG_OPEN_S)
    view = page.locator(".jd-detail")
    title = view.locator("h3", has_text=re.compile("^Trials"))
    expect(title).to_have_text(f"Trials: {TRIALS_PAGE} of {BIG_TRIALS:,} listed, best first")
    best = StoreReader(fresh_store).detail(experiment_id)["best"]["trial_id"]
    expect(view.locator(".jd-table tbody tr").first).to_have_attribute("data-trial", str(best))
    expect(view.locator(".jd-objective canvas")).to_have_count(1)
    view.locator(".jd-more").click()
    expect(title).to_have_text(f"Trials: {2 * TRIALS_PAGE} of {BIG_TRIALS:,} listed, best first")
    # Charts of many trials: the objective's axis and legend name no trial one by one.
    assert view.locator(".jd-objective .u-legend .u-series").count() <= 5
    assert not page.errors
