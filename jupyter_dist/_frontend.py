"""Which frontend draws this kernel's cells, as the Jupyter server that started the kernel says.

The server extension sets FRONTEND_ENV in its own environment when it loads, before any kernel starts, where the
server serves JupyterLab or Notebook 7 (which load jupyter_dist's lab extension, installed with the package);
every kernel it starts inherits it. That is true before the notebook's first cell runs, whatever the timing of
the page: a message from the page (a silent execute once the kernel reads idle, as 0.4 did) could arrive after
the user's first cells (Run All clicked at once, Restart & Run All, a kernel that was busy when the page opened).
"""

from __future__ import annotations

import os

FRONTEND_ENV = "JUPYTER_DIST_FRONTEND"
JUPYTERLAB = "jupyterlab"
# The jupyter-server extensions of the frontends that load prebuilt lab extensions, ours among them.
LAB_FRONTENDS = ("jupyterlab", "notebook")
LAB_EXTENSION = "jupyter-dist"  # our lab extension's name (labextension/package.json)


def lab_extension_draws() -> bool:
    """Whether this kernel was started by a Jupyter server whose frontend draws jupyter_dist's MIME bundle."""
    return os.environ.get(FRONTEND_ENV) == JUPYTERLAB
