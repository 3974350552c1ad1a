"""JupyterLab in a real browser: one `jupyter lab` server per test module on 127.0.0.1, driven by Playwright
through Debian's chromium (never a downloaded browser).

Each test still has a JupyterLab of its own to look at: its notebooks, store, settings and workspace are in its
own folder (``tmp_path``), which the server reads through a link switched to that folder before the test (the
server opens the store and reads the settings and workspace files at each request). After the test every kernel
it started is shut down, so the next test finds none running; where the server cannot be brought to that (a
kernel deleted while it was still starting can stay listed, broken), the next test gets a new server.

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
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_tools import stop_jupyter_server

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

    def listed(self, path: str) -> list | None:
        """What GET ``path`` lists, or None where the server fails to list it now (a 500)."""
        try:
            return self.api(path)
        except urllib.error.HTTPError as err:
            if err.code != 500:
                raise
            return None


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


class LabServer:
    """A `jupyter lab` server of a test module, reading everything a test owns through the link ``current``;
    started again for the next test if one left it unable to say which kernels it has."""

    def __init__(self, home: Path) -> None:
        self.home, self.current, self.idle = home, home / "current", home / "between-tests"
        self.idle.mkdir()
        _prepare(self.idle, SETTINGS)
        _point(self.current, self.idle)
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        port, self.token = _free_port(), secrets.token_hex(16)
        env = {
            **os.environ,
            "JUPYTER_TOKEN": self.token,
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
            # the server's reader and the kernels it starts: the store of the test now running
            "JUPYTER_DIST_STORE": str(self.current / "experiments.sqlite"),
        }
        log_path = self.home / f"lab-{self.starts}.log"
        with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jupyterlab",
                    "--no-browser",
                    "--allow-root",
                    "--ip=127.0.0.1",
                    f"--port={port}",
                    f"--ServerApp.root_dir={self.current / NOTEBOOKS}",
                    f"--LabApp.user_settings_dir={self.current / USER_SETTINGS}",
                    f"--LabApp.workspaces_dir={self.current / WORKSPACES}",
                    # window.jupyterapp, so a test can run JupyterLab commands (the theme switch) as a user would
                    "--LabApp.expose_app_in_browser=True",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=5):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    raise RuntimeError(f"jupyter lab did not start: {log_path.read_text()[-3000:]}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the server, by its PID (the kernels it started end with it)."""
        if self.process is not None:
            stop_jupyter_server(self.process)
        self.process = None

    def _wait_until_started(self, kernel_id: str) -> None:
        from jupyter_client import BlockingKernelClient

        connection = self.home / "runtime" / f"kernel-{kernel_id}.json"
        if not connection.exists():
            return
        client = BlockingKernelClient(connection_file=str(connection))
        client.load_connection_file()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
        except RuntimeError:  # it did not answer: deleting it is all there is to do
            pass
        finally:
            client.stop_channels()

    def _starting(self, listed: list[dict]) -> set[str]:
        """The kernels being started: a connection file in the runtime folder, not yet listed."""
        files = {p.stem.removeprefix("kernel-") for p in (self.home / "runtime").glob("kernel-*.json")}
        return files - {kernel["id"] for kernel in listed}

    def end_kernels(self, lab: Lab) -> bool:
        """Shut down every kernel (the test's, and the clusters in them), as the end of a server of the test's own
        did; False where this server could not be brought to list none."""
        # Deleting a kernel ends the sessions on it. A kernel deleted while it was still starting (a page reloaded
        # at the test's end starts one) can stay listed, broken (listing kernels then fails with a 500, and the
        # server hangs on it when stopped): each is asked for its kernel info first, which it answers once started.
        # While one is starting, listing kernels may fail too.
        # A kernel the page asked for just before it closed may still be starting: its connection file is written
        # before the server lists it. Stopping the server then hangs on it (it gets the interrupt mid-import), so it
        # is waited for, then ended as the others are.
        deadline = time.monotonic() + 60
        while (kernels := lab.listed("api/kernels")) is None or self._starting(kernels):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        for kernel in kernels:
            if kernel.get("execution_state") in (None, "starting"):  # a busy one answers only once idle
                self._wait_until_started(kernel["id"])
            try:
                lab.api(f"api/kernels/{kernel['id']}", method="DELETE")
            except urllib.error.HTTPError as err:
                if err.code != 404:  # 404: ended by now
                    return False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = lab.listed("api/kernels"), lab.listed("api/sessions")
            if None in left:
                return False
            if left == ([], []) and not self._starting([]):
                return True
            time.sleep(0.1)
        return False


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "own_lab_server: the test gets a jupyter lab server started for it, not one that served earlier tests",
    )


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """The module's JupyterLab server (started by the first test that needs it)."""
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield server
    finally:
        server.stop()


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
    if request.node.get_closest_marker("own_lab_server"):
        lab_server.stop()
    if lab_server.process is None or lab_server.process.poll() is not None:
        lab_server.stop()
        lab_server.start()
    lab = Lab(lab_server.base, lab_server.token, tmp_path / NOTEBOOKS, lab_server.process)
    try:
        yield lab
    finally:
        if not lab_server.end_kernels(lab):
            # What a server of the test's own would have taken away with it: the next test gets a new one.
            print("jupyter lab kept a kernel it could not shut down: the next test starts a new server")
            lab_server.stop()
        _point(lab_server.current, lab_server.idle)


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
