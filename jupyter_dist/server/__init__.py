"""The jupyter-server extension: the experiment store over REST, for the JupyterLab panel and for scripts.

Enabled on install (jupyter-config/jupyter_server_config.d/jupyter_dist.json); ``jupyter server extension
list`` shows it. It serves the store the kernels write by default (``JUPYTER_DIST_STORE``, dask config
``jupyter_dist.store``, or Jupyter's data directory), as the server's user sees it. Before the server starts
any kernel, it tells them (through its environment, which they inherit) which view their cells draw and where
its jupyter-server-proxy is.
"""

from __future__ import annotations

import os

from .._frontend import FRONTEND_ENV, JUPYTERLAB, LAB_EXTENSION, LAB_FRONTENDS
from ..cluster._dashboard import PROXY_PREFIX_ENV
from ..store import StoreReader, store_path
from ._handlers import handlers

__all__ = ["load_extension"]


def load_extension(serverapp) -> None:
    _announce_the_frontend(serverapp)
    _offer_the_dashboard_proxy(serverapp)
    web_app = serverapp.web_app
    store = StoreReader(store_path(None))
    web_app.settings["jupyter_dist_store"] = store
    web_app.add_handlers(".*$", handlers(web_app.settings["base_url"]))
    serverapp.log.info("jupyter_dist: serving experiments from %s", store.path)


def _announce_the_frontend(serverapp) -> None:
    """Tell the kernels this server starts that its frontend draws jupyter_dist's cell view (jupyter_dist/_frontend.py),
    so a run's view is chosen from something true before the notebook's first cell runs."""
    enabled = serverapp.jpserver_extensions
    frontends = [name for name in LAB_FRONTENDS if enabled.get(name)]
    # A bare `jupyter server` (a remote kernel host for VS Code, nbclient through a server) serves no page of
    # ours: its kernels keep the widget view, which those frontends draw. So does a server whose JupyterLab has
    # jupyter_dist's extension disabled (`jupyter labextension disable jupyter-dist`).
    if not frontends or _lab_extension_disabled(serverapp):
        return
    os.environ[FRONTEND_ENV] = JUPYTERLAB
    serverapp.log.info(
        "jupyter_dist: kernels started here draw runs with the extension (%s)", ", ".join(frontends)
    )


def _lab_extension_disabled(serverapp) -> bool:
    """Whether JupyterLab's page config (labconfig/page_config.json) disables jupyter_dist's lab extension."""
    try:
        from jupyter_core.paths import jupyter_path
        from jupyterlab_server.config import get_page_config
    except ImportError:  # no JupyterLab server: nothing disables it
        return False
    disabled = get_page_config(jupyter_path("labextensions"), logger=serverapp.log).get(
        "disabledExtensions", {}
    )
    if isinstance(disabled, list):  # the older form: a list of names
        return LAB_EXTENSION in disabled
    return bool(disabled.get(LAB_EXTENSION))


def _offer_the_dashboard_proxy(serverapp) -> None:
    """Tell the kernels this server starts (they inherit its environment) where its jupyter-server-proxy is, so
    the dashboard links they show go through it (cluster/_dashboard.py)."""
    if not serverapp.jpserver_extensions.get("jupyter_server_proxy"):
        return
    os.environ[PROXY_PREFIX_ENV] = serverapp.base_url
    serverapp.log.info("jupyter_dist: Dask dashboard links go through %sproxy/<port>/", serverapp.base_url)
