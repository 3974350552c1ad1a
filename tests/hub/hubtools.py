"""A real JupyterHub and a real Dask Gateway on 127.0.0.1, started and stopped by the tests (by PID): their
configuration, HTTP helpers and the Hub handle (the ``hub`` fixture is in conftest.py).

JupyterHub (PyPI) with configurable-http-proxy (npm), the dummy authenticator and the local-process spawner
(each user's server runs from this virtual environment, with a home directory of its own); dask-gateway-server
with its local backend, authenticating every request through the hub (a hub service with its own token). The
admin's configuration for jupyter_dist is what a hub admin would set in the user image: JUPYTER_DIST_CLUSTER
and dask-gateway's own address and auth settings.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
USERS = ("alice", "bob")
PASSWORD = "hub-test-password"
START_TIMEOUT_S = 90

# What both gateways of the tests share: on 127.0.0.1, the local backend, 1-core workers from this venv's dask.
_GATEWAY_ON_THIS_MACHINE = """
c.DaskGateway.address = "127.0.0.1:{gateway_port}"
c.Proxy.address = "127.0.0.1:{proxy_port}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.LocalBackend.clusters_directory = "{root}/gateway-clusters"
c.ClusterConfig.scheduler_cmd = ["{dask}", "scheduler"]
c.ClusterConfig.worker_cmd = ["{dask}", "worker"]
c.ClusterConfig.worker_cores = 1
c.ClusterConfig.worker_memory = 1.0
"""

# The hub's gateway: the hub's users, the admin's limit and options.
GATEWAY_CONFIG = (
    _GATEWAY_ON_THIS_MACHINE
    + """
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.JupyterHubAuthenticator"
c.JupyterHubAuthenticator.jupyterhub_api_url = "http://127.0.0.1:{hub_api_port}/hub/api"
c.JupyterHubAuthenticator.jupyterhub_api_token = "{gateway_token}"
c.ClusterConfig.cluster_max_workers = 3
from dask_gateway_server.options import Integer, Options
c.Backend.cluster_options = Options(
    Integer("worker_cores", 1, min=1, max=2), handler=lambda options: {{"worker_cores": options.worker_cores}}
)
"""
)

# A Dask Gateway on its own, with its shipped cluster defaults (no workers, no limits) but for some users: its
# basic-auth users stand for a hub's users whose admin set limits (or broke their worker image).
GATEWAY_ONLY_CONFIG = (
    _GATEWAY_ON_THIS_MACHINE
    + """
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.SimpleAuthenticator.password = "{password}"
from dask_gateway_server.options import Options
LIMITS = {{
    "starved": {{"cluster_max_workers": 0}},
    "capped": {{"cluster_max_workers": 1}},
    "broken": {{"worker_cmd": ["false"]}},
}}
c.Backend.cluster_options = Options(handler=lambda options, user: LIMITS.get(user.name, {{}}))
"""
)

HUB_CONFIG = """
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {hub_port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_api_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{chp_api_port}"
c.JupyterHub.db_url = "sqlite:///{root}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{root}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.pid_file = "{root}/proxy.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "{password}"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{root}/home/{{username}}"
c.Spawner.cmd = ["{bin}/jupyterhub-singleuser"]
c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
# What a hub admin sets in the user image: experiments run on the user's own Dask Gateway cluster.
c.Spawner.environment = {{
    "JUPYTER_DIST_CLUSTER": "gateway",
    "DASK_GATEWAY__ADDRESS": "http://127.0.0.1:{proxy_port}",
    "DASK_GATEWAY__PROXY_ADDRESS": "gateway://127.0.0.1:{proxy_port}",
    "DASK_GATEWAY__AUTH__TYPE": "jupyterhub",
    "DASK_JUPYTER_DIST__GATEWAY__WORKERS": "2",
    "DASK_JUPYTER_DIST__GATEWAY__OPTIONS": "{{'worker_cores': 1}}",
}}
c.JupyterHub.services = [
    {{"name": "dask-gateway", "api_token": "{gateway_token}", "url": "http://127.0.0.1:{proxy_port}"}},
    {{"name": "test-admin", "api_token": "{admin_token}"}},
]
c.JupyterHub.load_roles = [
    {{"name": "test-admin", "services": ["test-admin"], "scopes": ["admin:users", "admin:servers", "tokens"]}},
]
"""


@dataclass
class GatewayOnly:
    address: str  # its public address (the proxy)
    root: Path

    def login(self, user: str) -> dict:
        """The dask config of a kernel of ``user``'s, for dask.config.set."""
        return {
            "gateway.address": self.address,
            "gateway.proxy-address": self.address.replace("http://", "gateway://"),
            "gateway.auth.type": "basic",
            "gateway.auth.kwargs": {"username": user, "password": PASSWORD},
        }

    def log(self) -> str:
        return (self.root / "gateway.log").read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(url: str, token: str | None = None, method: str = "GET", body=None, auth_scheme: str = "token"):
    """(status, parsed JSON or text) of one HTTP request; HTTP errors are returned, not raised."""
    headers = {"Authorization": f"{auth_scheme} {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=60) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A refused request through the hub is a redirect to its login page: report it as such, do not follow."""

    def redirect_request(self, *args, **kwargs):
        return None


@dataclass
class Hub:
    url: str  # the public URL (configurable-http-proxy)
    api: str  # the hub's REST API, through the proxy
    gateway: str  # Dask Gateway's HTTP API
    admin_token: str
    root: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def login(self, user: str) -> str:
        """A token for ``user``, asked of the hub's REST API with the user's name and password."""
        status, body = request(
            f"{self.api}/users/{user}/tokens",
            method="POST",
            body={"auth": {"username": user, "password": PASSWORD}, "note": "hub test"},
        )
        assert status in (200, 201), (status, body)
        self.tokens[user] = body["token"]
        return body["token"]

    def start_server(self, user: str) -> str:
        """Start ``user``'s single-user server (as the user) and return its URL once it answers."""
        token = self.tokens[user]
        status, body = request(f"{self.api}/users/{user}/server", token, method="POST", body={})
        assert status in (201, 202, 400), (status, body)  # 400: already running
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            status, model = request(f"{self.api}/users/{user}", token)
            server = (model.get("servers") or {}).get("", {}) if status == 200 else {}
            if server.get("ready"):
                return f"{self.url}/user/{user}"
            time.sleep(0.5)
        raise AssertionError(f"{user}'s server did not start: {model}\n{self.log()[-4000:]}")

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.root.glob("*.log")))


def wait_for(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited:\n{log.read_text()[-4000:]}")
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except OSError:  # not listening yet, or (the proxy before the hub's routes are in) a 404
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {START_TIMEOUT_S}s:\n{log.read_text()[-4000:]}")
