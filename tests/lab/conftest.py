"""JupyterLab in a real browser: a `jupyter lab` server started per test on 127.0.0.1 (the test's own store,
settings and workspace), driven by Playwright through Debian's chromium (never a downloaded browser).

A failing test leaves a screenshot of the page in test-artifacts/<test name>.png.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_tools import stop

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
START_TIMEOUT_S = 60
# A user's settings for the tests' JupyterLab: every cell kept in the page (JupyterLab 4 leaves cells out of view
# out of the DOM by default), and no "get notified about Jupyter news?" toast over the page.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


@dataclass
class Lab:
    base: str
    token: str
    root: Path
    process: subprocess.Popen

    def url(self, path: str = "lab") -> str:
        return f"{self.base}/{path}?token={self.token}"

    def open(self, page) -> None:
        """JupyterLab, loaded in ``page``."""
        page.goto(self.url("lab"))
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)

    @staticmethod
    def open_panel(page) -> None:
        """Click the Experiments tab of the left sidebar, as a user does."""
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='jupyter-dist-experiments']").click()
        page.wait_for_selector("#jupyter-dist-experiments .jd-panel-header", timeout=10_000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path, fresh_store, request):
    """A real JupyterLab server reading the test's store (JUPYTER_DIST_STORE, set by ``fresh_store``).

    A test may give the user more settings (or other values of these) by parametrizing ``lab`` indirectly with a
    dict written like SETTINGS, e.g. ``{"@jupyterlab/apputils-extension/themes": {"theme": "JupyterLab Dark"}}``.
    """
    root = tmp_path / "lab"
    root.mkdir()
    for plugin, values in {**SETTINGS, **getattr(request, "param", {})}.items():
        path = tmp_path / "settings" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = open(tmp_path / "lab.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            # window.jupyterapp, so a test can run JupyterLab commands (the theme switch) as a user would
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"jupyter lab did not start: {(tmp_path / 'lab.log').read_text()[-3000:]}"
                ) from None
            time.sleep(0.2)
    try:
        yield Lab(base, token, root, process)
    finally:
        stop(process, grace=20)
        log.close()


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in this thread while it is
# started, which breaks the event-loop fixtures of every test after it.
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make setup` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # --no-sandbox: chromium refuses to start its sandbox as root (containers, CI).
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    failed = getattr(request.node, "report_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
