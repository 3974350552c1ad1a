"""The notebook experience in JupyterLab, measured in a real browser: the extension's view vs the widget view.

A real ``jupyter lab`` (127.0.0.1, a store in a temporary directory) and Debian's chromium driven by Playwright.
Two notebooks run the same cells, one per view: "lab" (the extension draws the MIME bundle the kernel sends and
follows the run through the REST API) and "widget" (``JUPYTER_DIST_PROGRESS=widget``: the ipywidgets view with
its plotly FigureWidget, what every frontend got before). Each notebook runs, in its own fresh kernel:

  1. a short HPO (TRIALS trials x STEPS reported steps) on a cold kernel: the embedded cluster starts;
  2. the same again, warm (the cluster is up);
  3. 2 trials calling ``report()`` in a tight loop for STREAM_S seconds (about 20,000 reports/s in all).

Measured from the page: bytes received over the kernel's websocket during each cell, the time from running the
cell to the view's first frame, and during (3) the browser's frame rate (requestAnimationFrame) and long tasks
(the Performance API's ``longtask`` entries: main-thread work over 50 ms, when the page cannot respond).

Run: ``.venv/bin/python bench/bench_lab.py`` (writes bench/results/lab.json).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuMonitor, contention_note, header, jupyter_server, write_result  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TRIALS, STEPS, STREAM_S = 32, 50, 10.0

HPO = f"""%%distribute hpo --trials {TRIALS} --metric v --sampler random --pruner none
from jupyter_dist import report, space
sp = {{"x": space.uniform(0, 1)}}
def short(x=0.0):
    for step in range({STEPS}):
        report(step=step, v=x * step)
"""

STREAM = f"""%%distribute hpo --trials 2 --parallel 2 --metric v --sampler random --pruner none
import time
from jupyter_dist import report, space
sp = {{"x": space.uniform(0, 1)}}
def stream(x=0.0):
    n, end = 0, time.time() + {STREAM_S}
    while time.time() < end:
        report(step=n, v=x)
        n += 1
"""

# Frames and long tasks, counted in the page from now on.
WATCH = """() => {
  window.__jd = { frames: 0, longtasks: [] };
  const tick = () => { window.__jd.frames++; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) { window.__jd.longtasks.push(e.duration); }
  }).observe({ type: 'longtask', buffered: false });
}"""

FIRST_FRAME = {"lab": ".jd-cell-view", "widget": ".jupyter-widgets.widget-vbox"}


def _notebook(path: Path, view: str) -> None:
    import nbformat

    setup = "%load_ext jupyter_dist"
    if view == "widget":
        setup = "import os\nos.environ['JUPYTER_DIST_PROGRESS'] = 'widget'\n" + setup
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (setup, HPO, HPO, STREAM)]
    nbformat.write(nb, path)


def _run_cell(page, index: int, view: str, received: list[int]) -> dict:
    """Run cell ``index`` (selected, Shift+Enter) and wait for it to finish."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-CodeCell").nth(index)
    cell.locator(".jp-InputPrompt").click()
    before = sum(received)
    t0 = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    cell.locator(FIRST_FRAME[view]).first.wait_for(state="visible", timeout=120_000)
    first_frame = time.perf_counter() - t0
    page.wait_for_function(
        f"""() => {{
            const panel = [...document.querySelectorAll('.jp-NotebookPanel')]
                .find(p => !p.classList.contains('lm-mod-hidden'));
            const p = panel.querySelectorAll('.jp-CodeCell')[{index}].querySelector('.jp-InputPrompt').innerText;
            return !p.includes('*') && /\\d/.test(p);
        }}""",
        timeout=300_000,
    )
    return {
        "first_frame_s": first_frame,
        "cell_s": time.perf_counter() - t0,
        "kernel_bytes": sum(received) - before,
    }


def measure(page, lab_url: str, folder: Path, view: str) -> dict:
    from playwright.sync_api import expect

    name = f"{view}.ipynb"
    _notebook(folder / name, view)
    received: list[int] = []

    def count(ws):
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: received.append(len(payload)))

    page.on("websocket", count)
    page.goto(f"{lab_url}/tree/{name}?reset")  # a fresh layout: only this notebook open
    page.wait_for_selector(".jp-NotebookPanel[data-jupyter-dist='flagged']", timeout=120_000)
    cell = page.locator(".jp-NotebookPanel:visible .jp-CodeCell").nth(0)  # the set-up cell: no view
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-InputPrompt")).to_have_text("[1]:", timeout=60_000)
    cold = _run_cell(page, 1, view, received)
    warm = _run_cell(page, 2, view, received)
    page.evaluate(WATCH)
    t0 = time.perf_counter()
    stream = _run_cell(page, 3, view, received)
    watched = page.evaluate("() => window.__jd")
    seconds = time.perf_counter() - t0
    page.remove_listener("websocket", count)
    return {
        "cold": cold,
        "warm": warm,
        "stream": {
            **stream,
            "frames_per_s": watched["frames"] / seconds,
            "long_tasks": len(watched["longtasks"]),
            "long_task_total_s": sum(watched["longtasks"]) / 1000,
            "long_task_max_s": max(watched["longtasks"], default=0) / 1000,
        },
    }


def _stream_reports(store: str) -> list[int]:
    """How many reports each stream run delivered (from the store: every one is there)."""
    import sqlite3

    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT e.name, count(r.seq) FROM experiments e JOIN reports r ON r.experiment_id = e.id "
            "GROUP BY e.id ORDER BY e.created"
        ).fetchall()
    return [n for name, n in rows if name.startswith("stream")]


def main() -> dict:
    from playwright.sync_api import sync_playwright

    wall0 = time.perf_counter()
    cpu = CpuMonitor()
    with tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-lab-") as tmp:
        folder = Path(tmp)
        root = folder / "root"
        root.mkdir()
        settings = folder / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        store = str(folder / "experiments.sqlite")
        lab_args = (
            f"--LabApp.user_settings_dir={folder / 'settings'}",
            f"--LabApp.workspaces_dir={folder / 'ws'}",
        )
        views = {}
        with (
            jupyter_server("jupyterlab", str(root), store, *lab_args) as (base, token),
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            for view in ("lab", "widget"):
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.goto(f"{base}/lab?token={token}")
                print(f"  {view} view...", flush=True)
                views[view] = measure(page, f"{base}/lab", root, view)
                page.context.close()
            browser.close()
        delivered = _stream_reports(store)
    for view, n in zip(("lab", "widget"), delivered, strict=False):
        s = views[view]["stream"]
        s["reports"] = n
        s["kernel_bytes_per_1000_reports"] = s["kernel_bytes"] / (n / 1000) if n else None
    result = header(
        "lab",
        {
            "hpo": f"{TRIALS} trials x {STEPS} steps, random sampler, embedded cluster (2 workers)",
            "stream": f"2 trials x {STREAM_S:.0f} s of report() in a tight loop",
            "browser": "Debian chromium, headless, 1400x900, JupyterLab with windowing off",
        },
    )
    lab, widget = views["lab"], views["widget"]
    result.update(
        views=views,
        ratios_lab_over_widget={
            "kernel_bytes_cold": lab["cold"]["kernel_bytes"] / widget["cold"]["kernel_bytes"],
            "first_frame_cold": lab["cold"]["first_frame_s"] / widget["cold"]["first_frame_s"],
            "first_frame_warm": lab["warm"]["first_frame_s"] / widget["warm"]["first_frame_s"],
        },
        target={"kernel_bytes_per_run_below": 500_000, "first_frame_s_below": 1.0},
        met={
            "kernel_bytes_per_run": lab["cold"]["kernel_bytes"] < 500_000
            and lab["warm"]["kernel_bytes"] < 500_000,
            "first_frame_within_1s": lab["cold"]["first_frame_s"] < 1.0,
        },
        cpu_contention=cpu.stop(),
        wall_s=time.perf_counter() - wall0,
    )
    return result


def summary(result: dict) -> str:
    lines = []
    for view, r in result["views"].items():
        s = r["stream"]
        per_k = s.get("kernel_bytes_per_1000_reports")
        lines.append(
            f"  {view:>6}: first frame cold {r['cold']['first_frame_s']:.2f} s, warm {r['warm']['first_frame_s']:.2f} s;"
            f" kernel websocket {r['cold']['kernel_bytes'] / 1e3:,.0f} KB cold run, {r['warm']['kernel_bytes'] / 1e3:,.0f}"
            f" KB warm run; stream: {s['frames_per_s']:.0f} frames/s, {s['long_tasks']} long tasks"
            f" ({s['long_task_total_s']:.2f} s, max {s['long_task_max_s'] * 1e3:.0f} ms),"
            f" {s['kernel_bytes'] / 1e3:,.0f} KB"
            + (f" = {per_k / 1e3:.2f} KB per 1,000 reports" if per_k else "")
        )
    return "\n".join(
        ["JupyterLab, extension view vs widget view:", *lines, contention_note(result["cpu_contention"])]
    )


if __name__ == "__main__":
    res = main()
    path = write_result("lab", res)
    print(summary(res))
    print(f"  -> {path}")
