"""The Dask dashboard link the views show: one the user's browser can open.

A scheduler on the machine of the Jupyter server (the embedded cluster, a local Dask Gateway) has a dashboard at
127.0.0.1:<port>, which only a browser on that machine reaches. Where the server runs jupyter-server-proxy,
jupyter_dist's server extension tells the kernels it starts the server's base URL (PROXY_PREFIX_ENV), and such
a link becomes ``<base_url>proxy/<port>/<path>``: under the user's own server (``/user/<name>/`` on
JupyterHub), behind its login, as dask-labextension links it. Any other link (a gateway's public address, a
``distributed.dashboard.link`` the admin set) is shown as it is.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

PROXY_PREFIX_ENV = "JUPYTER_DIST_PROXY_PREFIX"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def browser_link(link: str | None) -> str | None:
    """``link``, through the Jupyter server's proxy when it points at this machine and the server has one."""
    prefix = os.environ.get(PROXY_PREFIX_ENV)
    if not link or not prefix:
        return link
    parts = urlsplit(link)
    if parts.hostname not in LOOPBACK or parts.port is None:
        return link
    query = f"?{parts.query}" if parts.query else ""
    return f"{prefix.rstrip('/')}/proxy/{parts.port}{parts.path or '/'}{query}"


def dashboard_link(client) -> str | None:
    try:
        link = client.dashboard_link
    except Exception:  # a scheduler without a dashboard (no bokeh) has no link to show
        return None
    from .slurm import slurm_size

    if link and slurm_size(client) is not None:
        # A Slurm cluster's scheduler runs on this machine (in the kernel, or its keeper) and serves its
        # dashboard on every interface, but its link names the address the compute nodes reach, which the
        # user's browser may not: the proxy reaches it on this machine's loopback.
        parts = urlsplit(link)
        if parts.port is not None:
            link = parts._replace(netloc=f"127.0.0.1:{parts.port}").geturl()
    return browser_link(link)
