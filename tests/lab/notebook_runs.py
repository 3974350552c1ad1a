"""A notebook run in a real browser, as a user makes it and as the lab tests observe it.

Clicks go through JupyterLab's (or Notebook 7's) own menus; waiting uses only the frontend's own state (the
notebook's cells on the page, its session having a kernel, the prompt of a cell), never anything jupyter_dist's
extension does, so a test can tell whether the extension's view wins whatever the timing.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from playwright.sync_api import expect

MIME_TYPE = "application/vnd.jupyter-dist.experiment+json"
SAMPLE_EVERY_MS = 500
# The notebook in view (JupyterLab keeps the others' panels in the page, hidden).
CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"

# One sample of what the page shows about one code cell and the kernel, taken in one go. The kernel's state
# is JupyterLab's status bar, or (Notebook 7 has none) the notebook toolbar's execution indicator.
SAMPLE = """([current, index]) => {
  const panel = document.querySelector(current);
  const cell = panel && panel.querySelectorAll('.jp-Notebook .jp-CodeCell')[index];
  const view = cell && cell.querySelector('.jd-cell-view');
  const meta = view && view.querySelector('.jd-detail-meta');
  const bar = document.querySelector('#jp-main-statusbar');
  const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
  let kernel = 'other';
  if (bar) {
    kernel = bar.innerText.includes('Busy') ? 'busy' : bar.innerText.includes('Idle') ? 'idle' : 'other';
  } else if (indicator) {
    kernel = indicator.getAttribute('data-status') || 'other';
  }
  return {
    prompt: cell ? cell.querySelector('.jp-InputPrompt').innerText : '',
    view: !!view,
    widget: !!(cell && cell.querySelector('.jupyter-widgets')),
    phase: !!(view && view.querySelector('.jd-phase')),
    progress: meta ? meta.innerText.split(' trials')[0] : null,
    curves: !!(view && view.querySelector('.jd-chart canvas')),
    kernel
  };
}"""


def write_notebook(path: Path, *cells: str) -> None:
    """A notebook of code cells, the first loading jupyter_dist."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in ("%load_ext jupyter_dist", *cells)]
    nbformat.write(notebook, path)


def api(lab, path: str, method: str = "GET", body: dict | None = None):
    """The Jupyter server's REST API, as the test's user."""
    request = urllib.request.Request(
        f"{lab.base}/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None


def kernel_bytes(page) -> list[int]:
    """The sizes of the frames the page receives over kernel websockets from now on (a list that grows)."""
    sizes: list[int] = []

    def count(ws) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: sizes.append(len(payload)))

    page.on("websocket", count)
    return sizes


def open_notebook(lab, page, name: str, app: str = "lab") -> None:
    """Open ``name`` in JupyterLab ("lab") or Notebook 7 ("notebooks"); return once its cells are on the page
    (not before: JupyterLab's Run All on a notebook still loading runs nothing)."""
    cells = len(nbformat.read(lab.root / name, as_version=4).cells)
    page.goto(lab.url(f"{app}/tree/{name}" if app == "lab" else f"{app}/{name}"))
    wait_for_cells(page, cells)


def wait_for_cells(page, count: int) -> None:
    """Until the notebook in view shows its ``count`` cells."""
    page.wait_for_function(
        "([current, n]) => document.querySelectorAll(`${current} .jp-Cell`).length === n",
        arg=[CURRENT, count],
        timeout=60_000,
    )


def wait_for_a_kernel(page) -> None:
    """Until the notebook's session has a kernel (starting is enough): the first moment Run All runs anything.
    Earlier, JupyterLab answers Run All with its "Select Kernel" dialog and runs nothing."""
    page.wait_for_function(
        """(current) => {
          const panel = document.querySelector(current);
          const name = panel && panel.querySelector('.jp-KernelName, .jp-Toolbar-kernelName');
          const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
          const status = indicator && indicator.getAttribute('data-status');
          return !!name && name.innerText !== 'No Kernel' && !!status && status !== 'initializing';
        }""",
        arg=CURRENT,
        polling=20,
        timeout=120_000,  # a kernel starting on a loaded machine (a Python and torch to import) took over 60 s
    )


def open_and_run_all(lab, page, name: str, app: str = "lab") -> None:
    """Open ``name`` and click Run All the first moment it runs anything."""
    open_notebook(lab, page, name, app)
    wait_for_a_kernel(page)
    run_all(page)


def menu(page, title: str, command: str) -> None:
    """Click ``title`` in the menu bar, then the item running ``command``, as a user does."""
    page.locator(".lm-MenuBar-itemLabel", has_text=title).first.click()
    page.locator(f".lm-Menu-item[data-command='{command}']").click()


def run_all(page) -> None:
    menu(page, "Run", "runmenu:run-all")


def restart_and_run_all(page) -> None:
    menu(page, "Kernel", "runmenu:restart-and-run-all")
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart Kernel?"


@dataclass
class Run:
    """What the page showed while one cell ran: a sample every 0.5 s, the kernel's websocket bytes."""

    samples: list[dict] = field(default_factory=list)
    bytes: int = 0

    @property
    def running(self) -> list[dict]:
        return [s for s in self.samples if "[*]" in s["prompt"]]

    def busy_share(self) -> float:
        running = self.running
        return sum(s["kernel"] == "busy" for s in running) / max(1, len(running))


def watch_cell(page, index: int, sizes: list[int], started: int = 0, seconds: float = 240) -> Run:
    """Sample cell ``index`` until it has run (its prompt shows a number); the bytes are those ``sizes`` got
    after its first ``started`` frames."""
    run = Run()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sample = page.evaluate(SAMPLE, [CURRENT, index])
        if "[*]" not in sample["prompt"] and any(ch.isdigit() for ch in sample["prompt"]):
            run.bytes = sum(sizes[started:])
            return run
        run.samples.append(sample)
        page.wait_for_timeout(SAMPLE_EVERY_MS)
    raise AssertionError(f"cell {index} did not finish; last samples {run.samples[-3:]}")


def cell_view(page, index: int):
    return page.locator(f"{CURRENT} .jp-Notebook .jp-CodeCell").nth(index).locator(".jd-cell-view")


def save_and_reopen_without_kernel(lab, page, name: str, app: str = "lab") -> None:
    """Save the notebooks, shut every kernel down, and open the page again (which draws before any kernel)."""
    expect(page.locator(".jp-Notebook .jp-InputPrompt", has_text="[*]")).to_have_count(0, timeout=120_000)
    if app == "lab":
        menu(page, "File", "docmanager:save-all")  # every notebook open in the page
    else:
        page.keyboard.press("Control+s")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=10_000)
    for kernel_id in {session["kernel"]["id"] for session in api(lab, "api/sessions")}:
        api(lab, f"api/kernels/{kernel_id}", method="DELETE")
    page.reload()
    if app == "lab":
        page.wait_for_selector(f"{CURRENT} .jp-Cell", timeout=60_000)


def saved_view_of(lab, name: str, index: int) -> dict:
    """The jupyter_dist bundle that code cell ``index`` (counted as the page's ``.jp-CodeCell``s are) has in the
    saved notebook (AssertionError when none)."""
    saved = nbformat.read(lab.root / name, as_version=4)
    cell = [c for c in saved.cells if c.cell_type == "code"][index]
    for output in cell.outputs:
        if MIME_TYPE in output.get("data", {}):
            return output["data"][MIME_TYPE]
    raise AssertionError(f"code cell {index} of the saved {name} has no jupyter_dist view: {cell.outputs}")
