"""What a trial's state cell says in JupyterLab, in a real browser: a trial that resumed from its checkpoint says
from which step (in the cell's view and in the Experiments panel's), and brief trials waiting on their worker
read "queued" while they wait, never once the run has ended.

Each test runs a notebook in a real kernel of the test's JupyterLab (so the kernel has its own embedded cluster
of 2 workers) and reads the page as a user would see it. Screenshots of the resumed trial's two views are saved
in test-artifacts/.
"""

from __future__ import annotations

import time
from pathlib import Path

from notebook_runs import cell_view, open_and_run_all, write_notebook
from playwright.sync_api import expect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# A trial that checkpoints every 5th step and whose worker process dies (SIGKILL, as the OOM killer would) at
# step 12 the first time: Dask runs it again on the restarted worker and restore() gives it step 10's checkpoint.
RESUMING = """%%distribute hpo --trials 1 --metric loss --mode min --sampler random --pruner none
import os
import signal
import time

import jupyter_dist as jd
from jupyter_dist import space

sp = {{"lr": space.uniform(0.01, 0.1)}}


def resuming(lr=0.05):
    state = {{"w": 1.0}}
    start = 0
    restored = jd.restore(state)
    if restored is not None:
        start, state = restored.step + 1, restored.state
    for step in range(start, 30):
        state["w"] -= lr * state["w"]
        jd.report(step=step, loss=state["w"])
        if step % 5 == 0:
            jd.checkpoint(step, state)
        if step == 12 and not os.path.exists({marker!r}):
            os.mkdir({marker!r})
            time.sleep(0.3)  # the reports leave the worker first, as in a crash some time into training
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.1)
"""

# Brief trials (trials/_loop.py BRIEF_TRIAL): once 4 have completed with a median under 1 s, one more trial per
# worker waits queued behind the running one, except for the last trials.
BRIEF = """%%distribute hpo --trials 40 --metric v --sampler random --pruner none
import time

from jupyter_dist import report, space

sp = {"x": space.uniform(0, 1)}


def brief(x=0.0):
    time.sleep(0.3)
    report(step=0, v=x)
"""

# What the page shows of the notebook's second cell, in one go: whether it still runs, the experiment's state
# and each trial row's state and duration cells (those two are the table's 2nd and last columns).
SAMPLE = """() => {
  const cell = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[1];
  const view = cell.querySelector('.jd-cell-view');
  const state = view && view.querySelector('.jd-detail-header .jd-state');
  const rows = view ? [...view.querySelectorAll('.jd-table tbody tr')] : [];
  return {
    running: cell.querySelector('.jp-InputPrompt').innerText.includes('[*]'),
    state: state ? state.innerText : null,
    trials: rows.map(r => [r.children[1].innerText, r.lastElementChild.innerText])
  };
}"""


def test_a_trial_resumed_from_its_checkpoint_says_so_in_the_cell_and_in_the_panel(lab, page, tmp_path):
    write_notebook(lab.root / "resume.ipynb", RESUMING.format(marker=str(tmp_path / "died")))
    open_and_run_all(lab, page, "resume.ipynb")
    view = cell_view(page, 1)
    expect(view.locator(".jd-detail-header .jd-state")).to_have_text("completed", timeout=240_000)
    assert (tmp_path / "died").exists()  # the worker did die mid-trial
    resumed = "completed · resumed from step 10"
    expect(view.locator(".jd-table tbody tr td").nth(1)).to_have_text(resumed)
    view.locator(".jd-table").scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "resumed-cell-view.png"))

    lab.open_panel(page)
    item = page.locator("#jupyter-dist-experiments .jd-item", has_text="resuming")
    expect(item).to_contain_text("completed")  # the listing's next poll after the run's last write
    item.click()
    detail = page.locator(".jd-detail")
    expect(detail.locator(".jd-detail-name")).to_have_text("hpo resuming")
    expect(detail.locator(".jd-detail-header .jd-state")).to_have_text("completed")
    expect(detail.locator(".jd-table tbody tr td").nth(1)).to_have_text(resumed)
    detail.locator(".jd-table").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "resumed-panel-detail.png"))
    assert not page.errors


def test_brief_trials_read_queued_while_they_wait_and_never_once_the_run_has_ended(lab, page):
    write_notebook(lab.root / "brief.ipynb", BRIEF)
    open_and_run_all(lab, page, "brief.ipynb")
    samples = []
    shot = False
    deadline = time.monotonic() + 240
    while True:
        sample = page.evaluate(SAMPLE)
        samples.append(sample)
        if not shot and any(state == "queued" for state, _ in sample["trials"]):
            shot = True
            cell_view(page, 1).locator(".jd-table").scroll_into_view_if_needed()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "queued-cell-view.png"))
        if not sample["running"] and sample["state"] not in (None, "running"):
            break
        assert time.monotonic() < deadline, f"the cell did not finish; last samples {samples[-3:]}"
        page.wait_for_timeout(100)
    live = [s for s in samples if s["state"] == "running"]
    queued = [duration for s in live for state, duration in s["trials"] if state == "queued"]
    assert queued, live[-5:]  # seen while the run went on
    assert set(queued) == {"–"}, queued  # no time of its own while it waits
    ended = [s for s in samples if s["state"] not in (None, "running")]
    assert ended and not [s for s in ended if any(state == "queued" for state, _ in s["trials"])], ended
    # The run has ended: every trial completed, none left reading queued (the saved final view included).
    view = cell_view(page, 1)
    expect(view.locator(".jd-detail-header .jd-state")).to_have_text("completed")
    states = view.locator(".jd-table tbody tr td:nth-child(2)")
    expect(states).to_have_count(40)
    expect(states).to_have_text(["completed"] * 40)
    expect(view.get_by_text("queued", exact=True)).to_have_count(0)
    assert not page.errors
