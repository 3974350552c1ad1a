"""The view in the cell that runs an experiment, in JupyterLab in a real browser: it shows at once, draws live
from the server (not through the kernel's websocket), lets the kernel read Busy, links the Dask dashboard through
the server, and stops. test_first_contact.py runs it at every timing a first run meets, and reopens it saved."""

import time
import urllib.request

from notebook_runs import cell_view, kernel_bytes, open_and_run_all, watch_cell, write_notebook
from playwright.sync_api import expect

LIVE = """%%distribute hpo --trials 12 --metric v --sampler random --pruner none
import time
from jupyter_dist import report, space
sp = {"x": space.uniform(0, 1)}
def slow(x=0.0):
    for step in range(30):
        time.sleep(0.05)
        report(step=step, v=x * step)
"""

STOPPABLE = LIVE.replace("--trials 12", "--trials 20").replace("range(30)", "range(100)")


def test_the_view_shows_at_once_draws_live_and_the_kernel_reads_busy(lab, page):
    write_notebook(lab.root / "live.ipynb", LIVE)
    open_and_run_all(lab, page, "live.ipynb")
    running = watch_cell(page, 1, kernel_bytes(page)).running
    first_view = next(i for i, s in enumerate(running) if s["view"])
    # Drawn at once: while the embedded cluster still started ("connecting to the Dask cluster…"), before any
    # trial ran. (Not counted in samples from [*]: that also waits for the kernel and the cell before, as load
    # allows.)
    assert running[first_view]["phase"] and not running[first_view]["progress"], running[: first_view + 1]
    partial = {s["progress"] for s in running if s["progress"] and s["progress"] != "12/12"}
    assert len(partial) >= 3, running  # progress advanced while the cell ran
    assert any(s["curves"] and s["progress"] != "12/12" for s in running)  # curves before the end
    # The status bar says Busy while the cell runs, from when the kernel takes it up (Run All was clicked while
    # the kernel started: the prompt reads [*] before the kernel has the request).
    busy = [s["kernel"] == "busy" for s in running]
    taken_up = busy[busy.index(True) :]
    assert sum(taken_up) >= 0.9 * len(taken_up), running
    expect(cell_view(page, 1).locator(".jd-state")).to_have_text("completed")
    # The Dask dashboard link goes through this Jupyter server (jupyter-server-proxy), not to 127.0.0.1:<port>.
    href = cell_view(page, 1).locator("a.jd-dashboard").get_attribute("href")
    assert href.startswith("/proxy/") and href.endswith("/status"), href
    request = urllib.request.Request(f"{lab.base}{href}", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200 and b"Dask" in answer.read()
    assert not page.errors


def test_stop_in_the_cell_ends_the_run_in_a_final_state(lab, page):
    write_notebook(lab.root / "stop.ipynb", STOPPABLE)
    open_and_run_all(lab, page, "stop.ipynb")
    view = cell_view(page, 1)
    stop = view.locator(".jd-stop")
    expect(stop).to_be_visible(timeout=60_000)
    expect(view.locator(".jd-table tbody tr").first).to_be_visible(timeout=30_000)  # trials are running
    asked = time.monotonic()
    stop.click()
    expect(view.locator(".jd-state")).to_have_text("stopped", timeout=20_000)
    assert time.monotonic() - asked < 15
    expect(stop).to_have_count(0)  # not "Stopping…" forever: the final view has no button
    expect(view.locator(".jd-detail-meta")).not_to_contain_text("20/20")
    assert not page.errors


ASHA = """%%distribute hpo --trials 4 --metric v --sampler random OPTIONS
from jupyter_dist import report, space
sp = {"x": space.uniform(0, 1)}
def quick(x=0.0):
    for step in range(5):
        report(step=step, v=x * step)
"""


def test_the_first_line_says_asha_decides_by_default_and_how_to_turn_it_off(lab, page):
    default, off = ASHA.replace("OPTIONS", "--name asha"), ASHA.replace("OPTIONS", "--name off --pruner none")
    write_notebook(lab.root / "asha.ipynb", default, off)
    open_and_run_all(lab, page, "asha.ipynb")
    for index in (1, 2):
        expect(cell_view(page, index).locator(".jd-state")).to_have_text("completed", timeout=120_000)
    # Drawn by this build's view alone (not by one installed elsewhere): JUPYTER_PATH must lead to it.
    expect(cell_view(page, 1).locator(".jd-detail-header .jd-early-stopping")).to_have_text(
        "ASHA early stopping · pruner=None to turn it off"
    )
    expect(cell_view(page, 2).locator(".jd-early-stopping")).to_have_count(0)  # --pruner none: nothing said
    assert not page.errors
