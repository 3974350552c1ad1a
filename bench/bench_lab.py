"""A first run in a real JupyterLab driven by chromium (tests/lab/notebook_runs.py), the extension's view against
the widget view, then the scale figures (_lab_scale.py). Method: docs/performance/jupyterlab.md. Run:
``.venv/bin/python bench/bench_lab.py`` (~6 min; ``--part scale --trials ... --many-trials ...`` for smaller sizes;
``--many-trials 0`` skips the 100,000-trial experiment). A run of one part keeps the other part's figures from the
JSON already there (``kept_from_earlier_run`` says when and at which commit they were measured).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import _common
import _lab_scale
import _runner
from _common import jupyter_server
from _runner import measuring

CHROMIUM = "/usr/bin/chromium"
TESTS_LAB = Path(__file__).resolve().parent.parent / "tests" / "lab"  # notebook_runs.py: how tests click
TRIALS, STEPS, STREAM_S = 32, 50, 10.0
HPO_CELL, STREAM_CELL = 1, 2

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

DRAWN = {"lab": "view", "widget": "widget"}
# What each part writes to the JSON: a run of one part keeps the other's from the file already there.
PART_KEYS = {
    "first_run": ("views", "ratios_lab_over_widget", "target", "met"),
    "scale": ("scale", "scale_target", "scale_met"),
}
OPEN_BELOW_S = 2.0  # the sample's field saying the cell shows that view


def _notebook(runs, path: Path, view: str) -> None:
    import nbformat

    runs.write_notebook(path, HPO, STREAM)
    if view == "widget":
        notebook = nbformat.read(path, as_version=4)
        notebook.cells[
            0
        ].source = "import os\nos.environ['JUPYTER_DIST_PROGRESS'] = 'widget'\n%load_ext jupyter_dist"
        nbformat.write(notebook, path)


def _follow(runs, page, view: str, sizes: list[int], clicked: float, watch_stream: bool = False) -> dict:
    """Follow the HPO cell until it has run, looking every 50 ms for the view's first frame and keeping a sample
    every 0.5 s (as the tests do) for the kernel's state; with ``watch_stream``, the stream cell's run after it."""
    first_frame = started = None
    samples: list[dict] = []
    sampled_at = 0.0
    deadline = time.monotonic() + 300
    while True:
        sample = page.evaluate(runs.SAMPLE, [runs.CURRENT, HPO_CELL])
        running = "[*]" in sample["prompt"]
        if not running and any(ch.isdigit() for ch in sample["prompt"]):
            break
        if running:  # its outputs are cleared when it starts: a view seen now is this run's
            if started is None:
                started = len(sizes)
            if first_frame is None and sample[DRAWN[view]]:
                first_frame = time.perf_counter() - clicked
            if time.monotonic() - sampled_at >= runs.SAMPLE_EVERY_MS / 1000:
                samples.append(sample)
                sampled_at = time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the HPO cell did not finish; last sample {sample}")
        page.wait_for_timeout(50)
    result = {
        "first_frame_s": first_frame,
        "cell_s": time.perf_counter() - clicked,
        "kernel_bytes": sum(sizes[started or 0 :]),
        "busy_share": sum(s["kernel"] == "busy" for s in samples) / max(1, len(samples)),
        "drawn": view if first_frame is not None else None,
    }
    if watch_stream:
        page.evaluate(_lab_scale.WATCH)  # frames and long tasks, counted in the page from now on
        t0, before = time.perf_counter(), len(sizes)
        runs.watch_cell(page, STREAM_CELL, sizes)
        watched = page.evaluate("() => window.__jd")
        seconds = time.perf_counter() - t0
        result["stream"] = {
            "kernel_bytes": sum(sizes[before:]),
            "frames_per_s": watched["frames"] / seconds,
            "long_tasks": len(watched["longtasks"]),
            "long_task_total_s": sum(watched["longtasks"]) / 1000,
            "long_task_max_s": max(watched["longtasks"], default=0) / 1000,
        }
    return result


def measure(runs, page, lab, view: str) -> dict:
    name = f"{view}.ipynb"
    _notebook(runs, lab.root / name, view)
    sizes = runs.kernel_bytes(page)
    runs.open_notebook(lab, page, name)
    runs.wait_for_a_kernel(page)
    clicked = time.perf_counter()
    runs.run_all(page)
    new_kernel = _follow(runs, page, view, sizes, clicked, watch_stream=True)

    runs.menu(page, "Kernel", "runmenu:restart-and-run-all")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    clicked = time.perf_counter()
    page.locator(f"{runs.CURRENT} .jp-CodeCell").nth(HPO_CELL).locator(".jp-InputPrompt").filter(
        has_text="[*]"
    ).wait_for(timeout=60_000)
    restart = _follow(runs, page, view, sizes, clicked)
    runs.watch_cell(page, STREAM_CELL, sizes)

    page.wait_for_timeout(2000)  # the kernel idle, as when 0.4's flag had reached it
    page.locator(f"{runs.CURRENT} .jp-CodeCell").nth(HPO_CELL).locator(".jp-InputPrompt").click()
    clicked = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    idle = _follow(runs, page, view, sizes, clicked)
    return {"new_kernel": new_kernel, "restart": restart, "idle_kernel": idle}


LAB_SETTINGS = {
    "notebook-extension/tracker": {"windowingMode": "none"},
    "apputils-extension/notification": {"fetchNews": "false"},
}
SIZES = {
    "trials": 10_000,
    "steps": 100,
    "many_trials": 100_000,
    "many_steps": 10,
    "live_trials": 960,
    "live_workers": 8,
    "live_threads": 120,
    "live_seconds": 30.0,
    "window_s": 12,
}


def main(part: str, **sizes) -> dict:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(TESTS_LAB))
    import notebook_runs as runs

    if part not in ("all", "first_run", "scale"):
        raise SystemExit(f"--part: all, first_run or scale, not {part!r}")
    parts = ("first_run", "scale") if part == "all" else (part,)
    parameters = {
        "hpo": f"{TRIALS} trials x {STEPS} steps, random sampler, embedded cluster (2 workers)",
        "stream": f"2 trials x {STREAM_S:.0f} s of report() in a tight loop",
        "browser": "Debian chromium, headless, 1400x900, JupyterLab with windowing off",
        "timings": "new_kernel: Run All once the kernel exists; restart: Restart Kernel and Run All; "
        "idle_kernel: the HPO cell again, Shift+Enter, on the idle kernel (0.4's 'flagged kernel')",
        "parts": list(parts),
        "scale": sizes,
        "extension": "this checkout's build",
    }
    views, scale = {}, {}
    with (
        measuring("lab", parameters) as result,
        tempfile.TemporaryDirectory(prefix="jupyter_dist-bench-lab-") as tmp,
    ):
        folder = Path(tmp)
        root = folder / "root"
        root.mkdir()
        for plugin, values in LAB_SETTINGS.items():
            path = folder / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        lab_args = (
            f"--LabApp.user_settings_dir={folder / 'settings'}",
            f"--LabApp.workspaces_dir={folder / 'ws'}",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: the scale part opens a notebook by command
        )
        store = str(folder / "experiments.sqlite")
        if "scale" in parts:
            print(f"  writing {sizes['trials']:,} trials x {sizes['steps']} reports...", flush=True)
            experiment_id, scale["build_s"] = _lab_scale.build_big(
                store, root, sizes["trials"], sizes["steps"]
            )
            if sizes["many_trials"]:
                print(
                    f"  writing {sizes['many_trials']:,} trials x {sizes['many_steps']} reports...",
                    flush=True,
                )
                many_id, scale["many_build_s"] = _lab_scale.build_big(
                    store, root, sizes["many_trials"], sizes["many_steps"], name="many"
                )
        with (
            jupyter_server("jupyterlab", str(root), store, *lab_args) as (base, token),
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])

            def url(path: str, workspace: str | None = None) -> str:
                """A page of the server; in a workspace of its own, only that run's notebook open in it."""
                if workspace:
                    path = path.replace("lab/", f"lab/workspaces/{workspace}/", 1)
                return f"{base}/{path}?token={token}"

            if "scale" in parts:
                print("  opening it...", flush=True)
                scale["open"] = _lab_scale.measure_open(browser, url, experiment_id)
                if sizes["many_trials"]:
                    print(f"  opening the {sizes['many_trials']:,}-trial one...", flush=True)
                    scale["open_many"] = _lab_scale.measure_open(
                        browser, url, many_id, notebook="many.ipynb", workspace="scale-many"
                    )
                print(f"  {sizes['live_trials']} trials reporting live...", flush=True)
                scale["live"] = _lab_scale.measure_live(browser, url, base, token, root, store, sizes)
            for view in ("lab", "widget") if "first_run" in parts else ():
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                print(f"  {view} view...", flush=True)
                lab = SimpleNamespace(root=root, url=lambda path, ws=view: url(path, ws))
                views[view] = measure(runs, page, lab, view)
                page.context.close()
            browser.close()
    if scale:
        result["scale"] = scale
        result["scale_target"] = {
            "open_below_s": OPEN_BELOW_S,
            "many_trials_open_below_s": OPEN_BELOW_S,
            "frames_per_s_at_least": 30,
        }
        result["scale_met"] = {
            "panel_table": scale["open"]["panel"]["table_s"] < OPEN_BELOW_S,
            "panel_curves": _below(scale["open"]["panel"]["curves_s"]),
            "cell": _below(scale["open"]["cell"]["curves_s"]),
            "live_frames": scale["live"]["frames_per_s"] >= 30,
        }
        if "open_many" in scale:
            many = scale["open_many"]
            result["scale_met"].update(
                {
                    f"many_trials_{view}_{what}": _below(many[view][key])
                    for view in ("panel", "cell")
                    for what, key in (("table", "table_s"), ("objective", "objective_s"))
                }
            )
    if "first_run" in parts:
        lab_view, widget = views["lab"], views["widget"]
        timings = ("new_kernel", "restart", "idle_kernel")
        result.update(
            views=views,
            ratios_lab_over_widget={
                f"{what}_{timing}": lab_view[timing][key] / widget[timing][key]
                for timing in timings
                for what, key in (("kernel_bytes", "kernel_bytes"), ("first_frame", "first_frame_s"))
            },
            target={"kernel_bytes_per_run_below": 500_000, "busy_share_at_least": 0.8},
            met={
                "extension_view_every_timing": all(lab_view[t]["drawn"] == "lab" for t in timings),
                "kernel_bytes_per_run": all(lab_view[t]["kernel_bytes"] < 500_000 for t in timings),
                "busy_share": all(lab_view[t]["busy_share"] >= 0.8 for t in timings),
            },
        )
    if part != "all":
        _keep_other_part(result, parts)
    return result


def _below(seconds: float | None) -> bool:
    """Drawn within the target (a chart never drawn is not)."""
    return seconds is not None and seconds < OPEN_BELOW_S


def _keep_other_part(result: dict, parts: tuple[str, ...]) -> None:
    """A run of one part: the other part's figures from the JSON already there, so the file keeps both, and
    ``kept_from_earlier_run`` saying which parts, when and at which commit they were measured."""
    path = _common.RESULTS / "lab.json"
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    kept = [
        p
        for p in earlier.get("parameters", {}).get("parts", ())
        if p not in parts and all(k in earlier for k in PART_KEYS.get(p, ()))
    ]
    if not kept:
        return
    for p in kept:
        result.update({k: earlier[k] for k in PART_KEYS[p]})
    result["parameters"]["parts"] = [*parts, *kept]
    result["kept_from_earlier_run"] = {
        "parts": kept,
        "timestamp": earlier.get("timestamp"),
        "git": earlier.get("git"),
        "cpu_contention": earlier.get("cpu_contention"),
    }


if __name__ == "__main__":
    _runner.main("lab", main, {"part": ("all", "all, first_run or scale"), **SIZES})
