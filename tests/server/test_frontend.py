"""The server extension tells the kernels its server starts which view to draw, before any of their cells runs:
the extension's where the server serves JupyterLab or Notebook 7 with jupyter_dist's lab extension enabled,
the widget view elsewhere. A real Jupyter server (pytest-jupyter) and a real kernel it starts."""

import json
import os

import pytest

from jupyter_dist._frontend import FRONTEND_ENV

pytest_plugins = ["pytest_jupyter.jupyter_server"]

SERVERS = {
    "jupyterlab": ({"jupyter_dist": True, "jupyterlab": True}, False, "jupyterlab"),
    "notebook 7": ({"jupyter_dist": True, "notebook": True}, False, "jupyterlab"),
    "bare jupyter server": ({"jupyter_dist": True}, False, None),
    "jupyterlab, our lab extension disabled": ({"jupyter_dist": True, "jupyterlab": True}, True, None),
}


@pytest.fixture(params=list(SERVERS))
def server(request, tmp_path, monkeypatch):
    extensions, disabled, expected = SERVERS[request.param]
    monkeypatch.delenv(FRONTEND_ENV, raising=False)
    if disabled:  # what `jupyter labextension disable jupyter-dist` writes
        config = tmp_path / "config"
        (config / "labconfig").mkdir(parents=True)
        (config / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {"jupyter-dist": True}})
        )
        monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config))
    return extensions, expected


@pytest.fixture
def jp_server_config(server):
    return {"ServerApp": {"jpserver_extensions": server[0]}}


async def test_the_kernels_a_server_starts_know_their_view_before_their_first_cell(jp_serverapp, server):
    expected = server[1]
    assert os.environ.get(FRONTEND_ENV) == expected
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel(kernel_name="python3")
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        seen = []
        await client.execute_interactive(
            f"import os; print(os.environ.get({FRONTEND_ENV!r}))",
            output_hook=lambda m: seen.append(m["content"].get("text", "")),
            timeout=60,
        )
        assert "".join(seen).strip() == str(expected)
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(kernel_id, now=True)
