"""bench_lab's scale figures (issues 26 and 44) in a real JupyterLab: ended experiments opened from the Experiments
panel and in a reopened notebook (time to the table's first page, the objective chart and the curves; long tasks),
one of 10,000 trials x 100 reports and one of 100,000 trials (bench_lab's SIZES); and the live cell view while
hundreds of trials report at once (frames/s, long tasks, main-thread CPU against a blank page, the view's draws).
Method: docs/performance/jupyterlab.md, "At scale".
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from _common import get_json

TESTS_LAB = Path(__file__).resolve().parent.parent / "tests" / "lab"

# Frames and long tasks, counted in the page from now on.
WATCH = """() => {
  window.__jd = { frames: 0, longtasks: [], t0: performance.now() };
  const tick = () => { window.__jd.frames++; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) { window.__jd.longtasks.push(e.duration); }
  }).observe({ type: 'longtask', buffered: false });
}"""
# ... and the view's own draws meanwhile (ExperimentDisplay.draw's "jupyter-dist:draw" measures).
WATCHED = """() => ({
  ...window.__jd,
  seconds: (performance.now() - window.__jd.t0) / 1000,
  draws: performance.getEntriesByName('jupyter-dist:draw')
    .filter(e => e.startTime >= window.__jd.t0).map(e => e.duration)
})"""


def _watched(page) -> dict:
    w = page.evaluate(WATCHED)
    return {
        "seconds": w["seconds"],
        "frames_per_s": w["frames"] / w["seconds"],
        "long_tasks": len(w["longtasks"]),
        "long_task_total_s": sum(w["longtasks"]) / 1000,
        "long_task_max_s": max(w["longtasks"], default=0) / 1000,
        "draws": len(w["draws"]),
        "draw_median_ms": sorted(w["draws"])[len(w["draws"]) // 2] if w["draws"] else None,
        "draw_max_ms": max(w["draws"], default=None),
    }


class MainThread:
    """The CPU time a page's main thread used (Chrome's Performance domain, ThreadTime): the page's own work,
    which, unlike frames and long tasks, does not grow when other processes leave the browser less of the
    machine."""

    def __init__(self, page) -> None:
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Performance.enable")
        self.started = self._seconds()

    def _seconds(self) -> float:
        metrics = self.cdp.send("Performance.getMetrics")["metrics"]
        return next(m["value"] for m in metrics if m["name"] == "ThreadTime")

    def used(self) -> float:
        """Seconds of CPU since it was made."""
        return self._seconds() - self.started


def _until(page, selector: str, started: float, timeout_s: float = 300) -> float:
    page.wait_for_selector(selector, timeout=timeout_s * 1000)
    return time.perf_counter() - started


def _chart(page, selector: str, started: float, timeout_s: float = 60) -> float | None:
    """Seconds until the chart ``selector`` is drawn; None if it is not within ``timeout_s``."""
    try:
        return _until(page, selector, started, timeout_s)
    except Exception:  # playwright's TimeoutError: the JSON says the chart never came
        return None


def build_big(store: str, root: Path, trials: int, steps: int, name: str = "big") -> tuple[str, float]:
    """The big experiment in ``store`` and its notebook, ``root``/``name``.ipynb; its id and the seconds it took."""
    sys.path.insert(0, str(TESTS_LAB))
    from big_experiment import write_experiment, write_notebook

    t0 = time.perf_counter()
    record = write_experiment(store, trials, steps, name=name)
    write_notebook(record, root / f"{name}.ipynb")
    return record.definition.id, time.perf_counter() - t0


def _opened(page, scope: str, t0: float) -> dict:
    """The view ``scope`` from the click at ``t0``: its table's first page, the objective chart, the curves; the
    rows in the page, the objective's legend entries (past 1,000 trials it names no trial one by one), what its
    table's title says, and the page's long tasks and the view's draws since."""
    opened = {"table_s": _until(page, f"{scope} .jd-table tbody tr", t0)}
    opened["objective_s"] = _chart(page, f"{scope} .jd-objective canvas", t0)
    opened["curves_s"] = _chart(page, f"{scope} .jd-chart:not(.jd-objective) canvas", t0)
    opened["rows_in_page"] = page.locator(f"{scope} .jd-table tbody tr").count()
    opened["objective_legend_entries"] = page.locator(f"{scope} .jd-objective .u-legend .u-series").count()
    title = page.locator(f"{scope} h3", has_text=re.compile("^Trials")).first
    opened["table_title"] = title.inner_text() if title.count() else None
    opened.update({k: v for k, v in _watched(page).items() if k.startswith(("long_task", "draw"))})
    return opened


def measure_open(
    browser, url, experiment_id: str, notebook: str = "big.ipynb", workspace: str = "scale"
) -> dict:
    """Open the experiment from the panel, then its saved notebook, in a page (and a workspace) of its own."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url(f"lab/workspaces/{workspace}"))
    page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
    page.locator(".jp-SideBar .lm-TabBar-tab[data-id='jupyter-dist-experiments']").click()
    item = page.locator(f".jd-item[data-id='{experiment_id}']")
    item.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)  # the page settled: what follows is the opening alone
    page.evaluate(WATCH)
    t0 = time.perf_counter()
    item.click()
    panel = _opened(page, ".jd-detail", t0)

    page.wait_for_timeout(1000)
    page.evaluate(WATCH)
    t0 = time.perf_counter()
    # Not awaited: the command's promise settles once the notebook has loaded, part of what is timed.
    page.evaluate("(path) => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", notebook)
    cell = _opened(page, ".jd-cell-view", t0)
    page.context.close()
    return {"panel": panel, "cell": cell, "page_errors": errors}


LIVE = """import time
import jupyter_dist as jd
from distributed import LocalCluster
from jupyter_dist import space

cluster = LocalCluster(n_workers={workers}, threads_per_worker={threads}, dashboard_address=":0")

def sleepy(x=0.0):
    for step in range({steps}):
        time.sleep(0.1)
        jd.report(step=step, v=x * step)
    return {{"v": x}}
"""
RUN = """exp = jd.hpo(sleepy, {{"x": space.uniform(0, 1)}}, trials={trials}, parallel={trials}, metric="v",
             sampler="random", pruner=None, cluster=cluster, name="live")"""
RUN_CELL = 2  # code cells: %load_ext, LIVE, RUN, then the cluster closed


def _last_report(store: str) -> int:
    """The cursor of the store's last report (reports of every experiment count: only the live one writes),
    found by bisection with one-row pages, a few dozen index look-ups: the bench adds no load to speak of."""
    from jupyter_dist.store._sqlite import Database

    db = Database(store)
    try:
        live = db.find("live")
        if live is None:
            return 0
        low, high = 0, 1 << 40
        while low < high:
            mid = (low + high) // 2
            if db.report_page(live["id"], mid, 1):
                low = mid + 1
            else:
                high = mid
        return low
    finally:
        db.close()


def _running(base: str, token: str) -> int:
    """How many trials of the live run are running."""
    listing = get_json(f"{base}/jupyter-dist/api/experiments", token)["experiments"]
    live = next((e for e in listing if e["name"] == "live"), None)
    if live is None:
        return 0
    # The detail counts its trials by state, queued ones apart (it lists only a page of them).
    counts = get_json(f"{base}/jupyter-dist/api/experiments/{live['id']}", token)["counts"]
    return counts.get("running", 0)


def measure_live(browser, url, base: str, token: str, root: Path, store: str, sizes: dict) -> dict:
    """Run the live notebook and watch its cell view while every trial reports."""
    sys.path.insert(0, str(TESTS_LAB))
    import notebook_runs as runs

    trials, seconds = sizes["live_trials"], sizes["live_seconds"]
    source = LIVE.format(
        workers=sizes["live_workers"], threads=sizes["live_threads"], steps=int(seconds * 10)
    )
    runs.write_notebook(root / "live.ipynb", source, RUN.format(trials=trials), "cluster.close()")
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    lab = SimpleNamespace(root=root, url=lambda path: url(path.replace("lab/", "lab/workspaces/live/", 1)))
    runs.open_and_run_all(lab, page, "live.ipynb")
    cell = page.locator(f"{runs.CURRENT} .jp-CodeCell").nth(RUN_CELL)
    t0 = time.perf_counter()
    cell.locator(".jd-cell-view .jd-chart:not(.jd-objective) canvas").wait_for(timeout=600_000)
    # Until (nearly) every trial runs: the window is the steady state the issue describes.
    running, deadline = 0, time.monotonic() + 300
    while running < 0.9 * trials and time.monotonic() < deadline:
        page.wait_for_timeout(1000)
        running = _running(base, token)
    started_s = time.perf_counter() - t0
    reports_before = _last_report(store)
    # A blank page beside it, watched the same way: the frames the machine left any page meanwhile (the run's
    # kernel, scheduler and workers share its cores with the browser).
    control = browser.new_context(viewport={"width": 800, "height": 600}).new_page()
    control.set_content("<html><body>control</body></html>")
    page.evaluate(WATCH)
    control.evaluate(WATCH)
    cpu, control_cpu = MainThread(page), MainThread(control)
    page.wait_for_timeout(sizes["window_s"] * 1000)
    watched = _watched(page)
    blank = _watched(control)
    watched["main_thread_cpu_share"] = cpu.used() / watched["seconds"]
    blank_cpu = control_cpu.used() / blank["seconds"]
    control.context.close()
    reports_after, running_at_end = _last_report(store), _running(base, token)
    progress = cell.locator(".jd-detail-meta").first.inner_text()
    runs.watch_cell(page, RUN_CELL + 1, [], seconds=600)  # until the cluster is closed too
    page.context.close()
    return {
        **watched,
        "blank_page_frames_per_s": blank["frames_per_s"],
        "blank_page_long_tasks": blank["long_tasks"],
        "blank_page_main_thread_cpu_share": blank_cpu,
        "seconds_until_window": started_s,
        "running_trials_at_window_start": running,
        "running_trials_at_window_end": running_at_end,
        "reports_stored_per_s": (reports_after - reports_before) / watched["seconds"],
        "view_said": progress,
        "page_errors": errors,
    }
