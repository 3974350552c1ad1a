"""JupyterLab in a real browser: one `jupyter lab` server per test module on 127.0.0.1, driven by Playwright
through Debian's chromium (never a downloaded browser).

Each test still has a JupyterLab of its own to look at: its notebooks, store, settings and workspace are in its
own folder (``tmp_path``), which the server reads through a link switched to that folder before the test (the
server opens the store and reads the settings and workspace files at each request). After the test every kernel
it started is shut down, so the next test finds none running.

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
# In a test's folder, as the server sees it through the link: its notebooks, user settings and workspaces.
NOTEBOOKS, USER_SETTINGS, WORKSPACES = "lab", "settings", "workspaces"


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

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.base}/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read()
        return json.loads(text) if text else None


@dataclass
class LabServer:
    base: str
    token: str
    current: Path  # the link to the folder of the test now running
    process: subprocess.Popen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _point(link: Path, folder: Path) -> None:
    """Make ``link`` a symbolic link to ``folder``, replacing the one there in one step."""
    new = link.with_name(link.name + ".new")
    new.unlink(missing_ok=True)
    new.symlink_to(folder, target_is_directory=True)
    os.replace(new, link)


def _prepare(folder: Path, settings: dict) -> None:
    for name in (NOTEBOOKS, USER_SETTINGS, WORKSPACES):
        (folder / name).mkdir(exist_ok=True)
    for plugin, values in settings.items():
        path = folder / USER_SETTINGS / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A real JupyterLab server for the module's tests, reading everything a test owns through ``current``."""
    home = tmp_path_factory.mktemp("jupyterlab")
    idle = home / "between-tests"
    idle.mkdir()
    _prepare(idle, SETTINGS)
    current = home / "current"
    _point(current, idle)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        # the server's reader and the kernels it starts: the store of the test now running
        "JUPYTER_DIST_STORE": str(current / "experiments.sqlite"),
    }
    log = open(home / "lab.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={current / NOTEBOOKS}",
            f"--LabApp.user_settings_dir={current / USER_SETTINGS}",
            f"--LabApp.workspaces_dir={current / WORKSPACES}",
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
                    f"jupyter lab did not start: {(home / 'lab.log').read_text()[-3000:]}"
                ) from None
            time.sleep(0.2)
    try:
        yield LabServer(base, token, current, process)
    finally:
        stop(process, grace=20)
        log.close()


@pytest.fixture
def lab(lab_server, tmp_path, fresh_store, request):
    """JupyterLab as the test's own: the module's server showing the test's folder (``root``, its notebooks) and
    reading the test's store (JUPYTER_DIST_STORE, set by ``fresh_store``), settings and workspace.

    A test may give the user more settings (or other values of these) by parametrizing ``lab`` indirectly with a
    dict written like SETTINGS, e.g. ``{"@jupyterlab/apputils-extension/themes": {"theme": "JupyterLab Dark"}}``.
    """
    assert Path(fresh_store) == tmp_path / "experiments.sqlite"  # what the server reads through the link
    _prepare(tmp_path, {**SETTINGS, **getattr(request, "param", {})})
    _point(lab_server.current, tmp_path)
    lab = Lab(lab_server.base, lab_server.token, tmp_path / NOTEBOOKS, lab_server.process)
    try:
        yield lab
    finally:
        # The test's kernels (and the clusters in them) end with it, as they did with a server of its own.
        # (Deleting a kernel ends the sessions on it: JupyterLab's next session for the same path starts afresh.)
        for kernel in lab.api("api/kernels"):
            lab.api(f"api/kernels/{kernel['id']}", method="DELETE")
        assert lab.api("api/kernels") == [] and lab.api("api/sessions") == []
        _point(lab_server.current, lab_server.current.parent / "between-tests")
        assert lab_server.process.poll() is None, "the module's jupyter lab server exited during the test"


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
