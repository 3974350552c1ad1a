"""The view in the cell that runs an experiment, in JupyterLab in a real browser: it shows at once, draws live
from the server (not through the kernel's websocket), lets the kernel read Busy, stops, and is still there in
the saved notebook after the kernel is gone."""

import json
import shutil
import time
import urllib.request
from pathlib import Path

import nbformat
from playwright.sync_api import expect

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart_hpo.ipynb"
MAX_KERNEL_BYTES = 500_000

# One sample of what the page shows about the notebook's second cell and the kernel, taken in one go.
SAMPLE = """() => {
  const cell = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[1];
  const view = cell.querySelector('.jd-cell-view');
  const meta = view && view.querySelector('.jd-detail-meta');
  const status = document.querySelector('#jp-main-statusbar').innerText;
  return {
    prompt: cell.querySelector('.jp-InputPrompt').innerText,
    view: !!view,
    phase: !!(view && view.querySelector('.jd-phase')),
    progress: meta ? meta.innerText.split(' trials')[0] : null,
    curves: !!(view && view.querySelector('.jd-chart canvas')),
    kernel: status.includes('Busy') ? 'busy' : status.includes('Idle') ? 'idle' : 'other'
  };
}"""

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


def _api(lab, path: str, method: str = "GET"):
    request = urllib.request.Request(
        f"{lab.base}/{path}", method=method, headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def _write_notebook(path: Path, *cells: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in ("%load_ext jupyter_dist", *cells)]
    nbformat.write(notebook, path)


def _open_and_run_all(lab, page, name: str) -> None:
    page.goto(lab.url(f"lab/tree/{name}"))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    # The extension has told the kernel that JupyterLab shows it (a silent execute once the kernel is ready).
    page.wait_for_selector(".jp-NotebookPanel[data-jupyter-dist='flagged']", timeout=60_000)
    # Not awaited: the command's promise resolves only when every cell has run.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def _sample_until_done(page, seconds: float = 240) -> list[dict]:
    samples = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sample = page.evaluate(SAMPLE)
        if "[*]" not in sample["prompt"] and any(ch.isdigit() for ch in sample["prompt"]):
            return samples
        samples.append(sample)
        page.wait_for_timeout(100)
    raise AssertionError(f"the cell did not finish; last samples {samples[-3:]}")


def _cell_view(page):
    return page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".jd-cell-view")


def test_the_view_shows_at_once_draws_live_and_the_kernel_reads_busy(lab, page):
    _write_notebook(lab.root / "live.ipynb", LIVE)
    _open_and_run_all(lab, page, "live.ipynb")
    samples = _sample_until_done(page)
    running = [s for s in samples if "[*]" in s["prompt"]]
    first_view = next(i for i, s in enumerate(running) if s["view"])
    assert first_view <= 20, running[:25]  # drawn within a couple of samples of the cell starting
    assert any(s["phase"] for s in running), running  # "connecting to the Dask cluster…" while it started
    partial = {s["progress"] for s in running if s["progress"] and s["progress"] != "12/12"}
    assert len(partial) >= 3, running  # progress advanced while the cell ran
    assert any(s["curves"] and s["progress"] != "12/12" for s in running)  # curves before the end
    busy = [s["kernel"] == "busy" for s in running]
    assert sum(busy) >= 0.9 * len(busy), running  # the status bar says Busy while the cell runs
    expect(_cell_view(page).locator(".jd-state")).to_have_text("completed")
    # The Dask dashboard link goes through this Jupyter server (jupyter-server-proxy), not to 127.0.0.1:<port>.
    href = _cell_view(page).locator("a.jd-dashboard").get_attribute("href")
    assert href.startswith("/proxy/") and href.endswith("/status"), href
    request = urllib.request.Request(f"{lab.base}{href}", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200 and b"Dask" in answer.read()
    assert not page.errors


def test_the_quickstart_sends_little_over_the_kernel_and_survives_a_saved_notebook(lab, page):
    shutil.copy(QUICKSTART, lab.root / "quickstart.ipynb")
    kernel_bytes: list[int] = []

    def count(ws):
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: kernel_bytes.append(len(payload)))

    page.on("websocket", count)
    _open_and_run_all(lab, page, "quickstart.ipynb")
    _sample_until_done(page)
    view = _cell_view(page)
    expect(view.locator(".jd-state")).to_have_text("completed")
    expect(view.locator(".jd-table tbody tr")).to_have_count(12)
    expect(view.locator(".jd-stop")).to_have_count(0)  # no Stop once it has ended
    hpo_bytes = sum(kernel_bytes)
    assert hpo_bytes < MAX_KERNEL_BYTES, hpo_bytes

    # Saved, kernel shut down, reopened: the final view is drawn from the notebook itself.
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=120_000)  # every cell ran
    page.keyboard.press("Control+s")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=10_000)
    for session in _api(lab, "api/sessions"):
        _api(lab, f"api/kernels/{session['kernel']['id']}", method="DELETE")
    saved = nbformat.read(lab.root / "quickstart.ipynb", as_version=4)
    assert "application/vnd.jupyter-dist.experiment+json" in saved.cells[2].outputs[0]["data"]
    page.reload()
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    reopened = _cell_view(page)
    expect(reopened.locator(".jd-chart canvas")).to_have_count(2, timeout=20_000)  # curves, objective
    expect(reopened.locator(".jd-table tbody tr")).to_have_count(12)
    expect(reopened.locator(".jd-best")).to_contain_text("best val_acc=")
    expect(page.get_by_text("model not found")).to_have_count(0)
    assert not page.errors


def test_stop_in_the_cell_ends_the_run_in_a_final_state(lab, page):
    _write_notebook(lab.root / "stop.ipynb", STOPPABLE)
    _open_and_run_all(lab, page, "stop.ipynb")
    view = _cell_view(page)
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


def test_in_notebook_7_the_extension_draws_the_cell_too(lab, page):
    """The same server serves Notebook 7 (/notebooks/...): the kernel is flagged there too and the cell view
    is the extension's."""
    _write_notebook(
        lab.root / "nb7.ipynb", LIVE.replace("--trials 12", "--trials 4").replace("range(30)", "range(5)")
    )
    page.goto(lab.url("notebooks/nb7.ipynb"))
    page.wait_for_selector(".jp-NotebookPanel[data-jupyter-dist='flagged']", timeout=60_000)
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    for i in (0, 1):
        cells.nth(i).locator(".jp-InputPrompt").click()
        page.keyboard.press("Shift+Enter")
    view = cells.nth(1).locator(".jd-cell-view")
    expect(view.locator(".jd-state")).to_have_text("completed", timeout=120_000)
    expect(view.locator(".jd-table tbody tr")).to_have_count(4)
    # Notebook 7.6 itself throws this one on every page load, with jupyter_dist's extension disabled as well.
    assert [e for e in page.errors if "reading 'schema'" not in e] == []
