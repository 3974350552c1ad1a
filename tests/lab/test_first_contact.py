"""A first run, whatever its timing, draws the extension's view in JupyterLab and Notebook 7.

Each test clicks as early as a user can, through the frontend's own menus, and never waits for anything
jupyter_dist's extension does first. Each asserts, for the run it makes: the extension's view in the cell (not
the ipywidgets one), under MAX_KERNEL_BYTES over the kernel's websocket (the widget view sends plotly.js, ~5 MB),
the kernel read Busy in at least BUSY_SHARE of the 0.5 s samples while the cell ran, and the saved notebook,
reopened without its kernel, draws the curves with no "model not found" and is not marked modified.

The view is chosen from the kernel's environment, which the server extension sets before it starts any kernel
(jupyter_dist/_frontend.py). In 0.4 it was chosen by a silent execute the page sent once the kernel read idle:
every timing here ran the user's cells first and got the widget view.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
import websocket
from notebook_runs import (
    CURRENT,
    api,
    cell_view,
    kernel_bytes,
    open_and_run_all,
    open_notebook,
    restart_and_run_all,
    run_all,
    save_and_reopen_without_kernel,
    saved_view_of,
    wait_for_a_kernel,
    wait_for_cells,
    watch_cell,
    write_notebook,
)
from playwright.sync_api import expect

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart_hpo.ipynb"
EXAMPLES = sorted(QUICKSTART.parent.glob("*.ipynb"))
# What ipykernel answers kernel_info with, but the version.
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}
MAX_KERNEL_BYTES = 500_000
BUSY_SHARE = 0.8

SHORT = """%%distribute hpo --trials 8 --metric v --sampler random --pruner none
import time
from jupyter_dist import report, space
sp = {"x": space.uniform(0, 1)}
def short(x=0.0):
    for step in range(20):
        time.sleep(0.1)
        report(step=step, v=x * step)
"""

API_FIRST = """import time
import jupyter_dist as jd
from jupyter_dist import report, space

def short(x=0.0):
    for step in range(20):
        time.sleep(0.1)
        report(step=step, v=x * step)

exp = jd.hpo(short, {"x": space.uniform(0, 1)}, trials=8, metric="v", sampler="random", pruner=None)
"""


def _check_the_run(page, run, index: int = 1) -> None:
    """The extension drew the cell, little came over the kernel's websocket, and the kernel read Busy."""
    assert run.running, "the cell was never seen running"
    assert not any(s["widget"] for s in run.samples), "the ipywidgets view was drawn"
    expect(cell_view(page, index).locator(".jd-state")).to_have_text("completed", timeout=30_000)
    assert run.bytes < MAX_KERNEL_BYTES, run.bytes
    assert run.busy_share() >= BUSY_SHARE, [s["kernel"] for s in run.running]


def _check_the_saved_notebook(lab, page, name: str, index: int = 1, app: str = "lab") -> None:
    save_and_reopen_without_kernel(lab, page, name, app)
    assert "snapshot" in saved_view_of(lab, name, index)
    view = cell_view(page, index)
    expect(view.locator(".jd-chart canvas").first).to_be_visible(timeout=30_000)
    expect(view.locator(".jd-table tbody tr").first).to_be_visible()
    expect(page.get_by_text("model not found")).to_have_count(0)
    # every run here is an HPO run: its parameter importances were saved with it
    assert "importances" in saved_view_of(lab, name, index)
    expect(view.locator(".jd-importances h3")).to_contain_text("Parameter importances")
    # Drawn, the saved view leaves the notebook as it was saved: no "save your changes?" for a notebook the user
    # did not change (issue 41).
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)


def _errors(page) -> list[str]:
    # Notebook 7.6 itself throws this one on every page load, with jupyter_dist's extension disabled as well.
    return [e for e in page.errors if "reading 'schema'" not in e]


def test_the_quickstart_run_all_the_moment_its_kernel_starts(lab, page):
    shutil.copy(QUICKSTART, lab.root / "quickstart.ipynb")
    sizes = kernel_bytes(page)
    open_and_run_all(lab, page, "quickstart.ipynb")
    run = watch_cell(page, 1, sizes)
    _check_the_run(page, run)
    expect(cell_view(page, 1).locator(".jd-table tbody tr")).to_have_count(12)
    _check_the_saved_notebook(lab, page, "quickstart.ipynb")
    expect(cell_view(page, 1).locator(".jd-best")).to_contain_text("best val_acc=")
    assert not _errors(page)


def test_restart_kernel_and_run_all(lab, page):
    # The experiment is the notebook's first cell (through the Python API): the cell 0.4's flag raced with.
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    notebook.cells = [nbformat.v4.new_code_cell(API_FIRST)]
    nbformat.write(notebook, lab.root / "restart.ipynb")
    sizes = kernel_bytes(page)
    open_and_run_all(lab, page, "restart.ipynb")
    watch_cell(page, 0, sizes)
    before = len(sizes)
    restart_and_run_all(page)
    # The first run's view stays until the restarted kernel clears the cell: wait for this run's prompt.
    expect(page.locator(f"{CURRENT} .jp-CodeCell").nth(0).locator(".jp-InputPrompt")).to_have_text(
        "[*]:", timeout=60_000
    )
    run = watch_cell(page, 0, sizes, started=before)
    _check_the_run(page, run, index=0)
    _check_the_saved_notebook(lab, page, "restart.ipynb", index=0)
    assert not _errors(page)


def _busy_kernel(lab, name: str, seconds: float) -> tuple[str, threading.Thread]:
    """A session for notebook ``name`` whose kernel is made busy for ``seconds`` before any page opens it: an
    execute request sent over the kernel's websocket, as another client of the kernel would. Returns the
    kernel's id and the thread that waits for it."""
    session = api(
        lab, "api/sessions", "POST", {"path": name, "type": "notebook", "kernel": {"name": "python3"}}
    )
    url = f"{lab.base.replace('http', 'ws')}/api/kernels/{session['kernel']['id']}/channels?token={lab.token}"
    ws = websocket.create_connection(url, timeout=60)
    ws.send(
        '{"header": {"msg_id": "busy", "msg_type": "execute_request", "username": "test", "session": "busy",'
        ' "version": "5.3"}, "parent_header": {}, "metadata": {}, "channel": "shell",'
        f' "content": {{"code": "import time; time.sleep({seconds})", "silent": false}}}}'
    )

    def until_idle() -> None:
        try:
            while '"execution_state": "idle"' not in ws.recv():
                pass
        finally:
            ws.close()

    waiter = threading.Thread(target=until_idle)
    waiter.start()
    deadline = time.monotonic() + 30
    while api(lab, f"api/kernels/{session['kernel']['id']}")["execution_state"] != "busy":
        assert time.monotonic() < deadline, "the kernel never read busy"
        time.sleep(0.05)
    return session["kernel"]["id"], waiter


def test_a_notebook_opened_while_its_kernel_is_busy(lab, page):
    write_notebook(lab.root / "busy.ipynb", SHORT)
    kernel_id, waiter = _busy_kernel(lab, "busy.ipynb", seconds=8)
    try:
        sizes = kernel_bytes(page)
        open_notebook(lab, page, "busy.ipynb")
        wait_for_a_kernel(page)
        # Still sleeping (the page may read Idle meanwhile: ipykernel answers its kernel_info on another thread).
        assert api(lab, f"api/kernels/{kernel_id}")["execution_state"] == "busy"
        run_all(page)
        run = watch_cell(page, 1, sizes)
    finally:
        waiter.join(60)
    _check_the_run(page, run)
    _check_the_saved_notebook(lab, page, "busy.ipynb")
    assert not _errors(page)


def test_a_second_notebook_on_the_same_kernel(lab, page):
    write_notebook(lab.root / "first.ipynb", SHORT)
    write_notebook(lab.root / "second.ipynb", SHORT.replace("short", "again"))
    sizes = kernel_bytes(page)
    open_and_run_all(lab, page, "first.ipynb")
    _check_the_run(page, watch_cell(page, 1, sizes))

    # The second notebook joins the first one's kernel (as Kernel > Change Kernel > the first one's session
    # does), is opened from the file browser in the same page, and runs.
    (first,) = api(lab, "api/sessions")
    api(
        lab,
        "api/sessions",
        "POST",
        {"path": "second.ipynb", "type": "notebook", "kernel": {"id": first["kernel"]["id"]}},
    )
    before = len(sizes)
    page.locator(".jp-DirListing-item[title^='Name: second.ipynb']").dblclick()
    wait_for_cells(page, 2)
    wait_for_a_kernel(page)
    run_all(page)
    run = watch_cell(page, 1, sizes, started=before)
    _check_the_run(page, run)
    _check_the_saved_notebook(lab, page, "second.ipynb")
    assert not _errors(page)


# Notebook 7's page, served by a server that had served the tests before it in this module, threw "Command
# 'filebrowser:open-path' not registered." on load (in both full runs; never with a fresh server, nor when Notebook 7
# pages were loaded on their own with jupyter_dist's extension disabled): not investigated further, so this test
# keeps a server of its own, as every test had before the servers were shared.
@pytest.mark.own_lab_server
def test_notebook_7_run_all_the_moment_its_kernel_starts(lab, page):
    write_notebook(lab.root / "nb7.ipynb", SHORT)
    sizes = kernel_bytes(page)
    open_and_run_all(lab, page, "nb7.ipynb", app="notebooks")
    run = watch_cell(page, 1, sizes)
    _check_the_run(page, run)
    _check_the_saved_notebook(lab, page, "nb7.ipynb", app="notebooks")
    assert not _errors(page)


def test_an_example_notebook_opened_is_not_marked_modified(lab, page):
    # JupyterLab writes the kernel's spec into a notebook whose kernelspec names it otherwise ("Python 3", not
    # the installed kernel's "Python 3 (ipykernel)"): every example notebook read as modified once opened. It
    # writes the kernel's language_info too, which names the Python's version: as a notebook saved on this
    # Python has it, the example carries this one's (the file in the repository has none). One is opened here
    # (the quickstart, which a user opens first); every example names its kernel as this one does.
    spec = json.loads(
        subprocess.check_output([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"])
    )
    installed = spec["kernelspecs"]["python3"]["spec"]
    for path in EXAMPLES:
        kernelspec = nbformat.read(path, as_version=4).metadata["kernelspec"]
        assert (kernelspec["name"], kernelspec["display_name"]) == ("python3", installed["display_name"]), (
            path
        )
    example = QUICKSTART
    notebook = nbformat.read(example, as_version=4)
    notebook.metadata["language_info"] = LANGUAGE_INFO | {"version": platform.python_version()}
    nbformat.write(notebook, lab.root / example.name)
    lab.open(page)
    open_notebook(lab, page, example.name)
    wait_for_a_kernel(page)
    # The kernel's answer to kernel_info is what JupyterLab compares the notebook's metadata with.
    page.wait_for_function(
        "() => !!window.jupyterapp.shell.currentWidget.context.model.getMetadata('language_info')",
        timeout=120_000,
    )
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty") is False
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)
