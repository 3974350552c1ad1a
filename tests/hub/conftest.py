"""The ``hub`` fixture: JupyterHub and Dask Gateway processes for this module; ``gateway``: a Dask Gateway alone
(see hubtools.py)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess

import pytest
from hubtools import (
    BIN,
    GATEWAY_CONFIG,
    GATEWAY_ONLY_CONFIG,
    HUB_CONFIG,
    PASSWORD,
    USERS,
    GatewayOnly,
    Hub,
    free_port,
    wait_for,
)
from process_tools import stop


def _clean_env() -> dict[str, str]:
    """The environment without the settings of jupyter_dist, Dask and JupyterHub that this process may have."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_DIST", "DASK_", "JUPYTERHUB"))}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """A dask-gateway-server alone (local backend, basic auth: any user name, one password), ~2 s to start."""
    root = tmp_path_factory.mktemp("gateway")
    ports = {name: free_port() for name in ("gateway_port", "proxy_port")}
    config = GATEWAY_ONLY_CONFIG.format(**ports, root=root, dask=BIN / "dask", password=PASSWORD)
    (root / "dask_gateway_config.py").write_text(config)
    with open(root / "gateway.log", "wb") as log:
        process = subprocess.Popen(
            [str(BIN / "dask-gateway-server"), "-f", str(root / "dask_gateway_config.py")],
            cwd=root,
            env=_clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        address = f"http://127.0.0.1:{ports['proxy_port']}"
        wait_for(f"{address}/api/health", process, root / "gateway.log")
        yield GatewayOnly(address=address, root=root)
    finally:
        stop(process)  # it stops the clusters it started


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    chp = shutil.which("configurable-http-proxy")
    if chp is None:
        pytest.fail("configurable-http-proxy is missing: `make setup` installs it (npm install -g)")
    root = tmp_path_factory.mktemp("hub")
    ports = {
        name: free_port()
        for name in ("hub_port", "hub_api_port", "chp_api_port", "gateway_port", "proxy_port")
    }
    values = dict(
        ports,
        root=root,
        bin=BIN,
        dask=BIN / "dask",
        users=set(USERS),
        password=PASSWORD,
        gateway_token=secrets.token_hex(16),
        admin_token=secrets.token_hex(16),
    )
    (root / "dask_gateway_config.py").write_text(GATEWAY_CONFIG.format(**values))
    (root / "jupyterhub_config.py").write_text(HUB_CONFIG.format(**values))
    env = _clean_env()
    env["PATH"] = f"{BIN}:{os.path.dirname(chp)}:{env.get('PATH', '')}"
    processes = []
    try:
        with open(root / "gateway.log", "wb") as log:
            gateway = subprocess.Popen(
                [str(BIN / "dask-gateway-server"), "-f", str(root / "dask_gateway_config.py")],
                cwd=root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        processes.append(gateway)
        with open(root / "hub.log", "wb") as log:
            hub_process = subprocess.Popen(
                [str(BIN / "jupyterhub"), "-f", str(root / "jupyterhub_config.py")],
                cwd=root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        processes.append(hub_process)
        url = f"http://127.0.0.1:{ports['hub_port']}"
        wait_for(f"http://127.0.0.1:{ports['proxy_port']}/api/health", gateway, root / "gateway.log")
        wait_for(f"{url}/hub/api", hub_process, root / "hub.log")
        yield Hub(
            url=url,
            api=f"{url}/hub/api",
            gateway=f"http://127.0.0.1:{ports['proxy_port']}",  # its public address (the proxy)
            admin_token=values["admin_token"],
            root=root,
        )
    finally:
        # The hub stops the users' servers it started (and their kernels); the gateway its clusters.
        for process in reversed(processes):
            stop(process)
        # The proxy the hub started, if the hub went before it could stop it (killed while starting).
        pid_file = root / "proxy.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
