"""The jupyter-server extension: the experiment store over REST, for the JupyterLab panel and for scripts.

Enabled on install (jupyter-config/jupyter_server_config.d/jupyter_dist.json); ``jupyter server extension
list`` shows it. It serves the store the kernels write by default (``JUPYTER_DIST_STORE``, dask config
``jupyter_dist.store``, or Jupyter's data directory), as the server's user sees it.
"""

from __future__ import annotations

import os

from ..runtime._dashboard import PROXY_PREFIX_ENV
from ..store import store_path
from ._handlers import handlers
from ._manager import ExperimentsManager

__all__ = ["ExperimentsManager", "load_extension"]


def load_extension(serverapp) -> None:
    _offer_the_dashboard_proxy(serverapp)
    web_app = serverapp.web_app
    manager = ExperimentsManager(store_path(None))
    web_app.settings["jupyter_dist_manager"] = manager
    web_app.add_handlers(".*$", handlers(web_app.settings["base_url"]))
    serverapp.log.info("jupyter_dist: serving experiments from %s", manager.store_path)


def _offer_the_dashboard_proxy(serverapp) -> None:
    """Tell the kernels this server starts (they inherit its environment) where its jupyter-server-proxy is, so
    the dashboard links they show go through it (runtime/_dashboard.py)."""
    if not serverapp.jpserver_extensions.get("jupyter_server_proxy"):
        return
    os.environ[PROXY_PREFIX_ENV] = serverapp.base_url
    serverapp.log.info("jupyter_dist: Dask dashboard links go through %sproxy/<port>/", serverapp.base_url)
