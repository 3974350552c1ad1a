"""An elastic data-parallel run in JupyterLab, in a real browser: a rank's worker dies mid-run, the job goes on
from its checkpoint, and the view in the cell says so (its restarts, and the state cell's ranks), also in the saved
notebook reopened without a kernel."""

import re

from notebook_runs import cell_view, open_and_run_all, save_and_reopen_without_kernel, write_notebook
from playwright.sync_api import expect

ELASTIC = """%%distribute ddp --workers 2 --min-workers 1 --max-workers 2
import os, signal, tempfile, time
import torch
import jupyter_dist as jd
MARK = os.path.join(tempfile.mkdtemp(), "killed")   # the worker comes back through its nanny: killed once
def train(steps=40):
    model = jd.prepare(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    state = {"model": model, "optimizer": optimizer}
    restored = jd.restore(state)
    for step in range(0 if restored is None else restored.step + 1, steps):
        optimizer.zero_grad()
        model(torch.ones(8, 4)).sum().backward()
        optimizer.step()
        jd.report(step=step, world=jd.world_size())
        if step % 5 == 0:
            jd.checkpoint(step, state)
        if step == 12 and jd.rank() == 1 and not os.path.exists(MARK):
            open(MARK, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.05)
"""


def test_the_cell_view_says_the_job_lost_a_rank_and_went_on(lab, page):
    write_notebook(lab.root / "elastic.ipynb", ELASTIC)
    open_and_run_all(lab, page, "elastic.ipynb")
    view = cell_view(page, 1)
    expect(view.locator(".jd-state").first).to_have_text("completed", timeout=120_000)
    restarts = view.locator(".jd-restarts li")
    expect(restarts.first).to_contain_text("rank 1 (worker tcp://")
    # on the rank left, or on two again if the nanny brought the killed worker back that fast
    expect(restarts.first).to_contain_text(re.compile(r"continuing on (1 rank|2 ranks) from step 10"))
    expect(restarts.first).to_contain_text("steps redone")
    expect(view.locator(".jd-table tbody tr").first).to_contain_text("ranks (regrouped")
    save_and_reopen_without_kernel(lab, page, "elastic.ipynb")
    reopened = cell_view(page, 1)
    expect(reopened.locator(".jd-restarts li").first).to_contain_text("lost at step", timeout=30_000)
    assert not page.errors
