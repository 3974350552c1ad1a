"""Sphinx configuration: MyST pages, the example notebooks executed at build time (MyST-NB), the pydata theme."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import jupyter_dist  # noqa: E402

project = "jupyter_dist"
author = "the jupyter_dist developers"
copyright = "2026, the jupyter_dist developers"
release = version = jupyter_dist.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx_design",
    # The ipython3 lexer of the code cells (%%distribute and other magics highlighted).
    "IPython.sphinxext.ipython_console_highlighting",
    "bench_results",  # docs/_ext: the performance pages' tables and plots, read from bench/results/*.json
    "magic_options",  # docs/_ext: the %%distribute options table, from the magics' own argument parsers
    "entry_point_options",  # docs/_ext: hpo()'s (pbt's...) arguments table, from the options' one definition
]

# The tutorials are the example notebooks themselves: docs/tutorials/ holds links to notebooks/ (committed, so the
# pages' links to them lead somewhere on GitHub too), and the pages are always the notebooks the tests run.
exclude_patterns = [
    "_build",
    "measurements",
    "**/.ipynb_checkpoints",
    "Thumbs.db",
    ".DS_Store",
]
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3
# Quotes and ellipses only: "--trials" in the magics' help must not become an en dash.
smartquotes_action = "qe"

# The kernels that execute the pages inherit this environment:
# - the cell's view is the JupyterLab extension's bundle, whose HTML fallback (the finished experiment's table)
#   is what a static page can show; the ipywidgets view would need a live kernel;
# - plotly figures are a <div> drawn by the plotly.js the site serves itself (no CDN: the site works from
#   disk, offline): an IPython profile of the build's own whose startup file (_ext/kernel_startup.py) sets
#   plotly's renderer;
# - the experiments a page runs go to a store of that page's kernel (the startup file again), not the user's:
#   pages execute side by side (-j), and a name another page's run had taken would read "train-2".
os.environ["JUPYTER_DIST_PROGRESS"] = "lab"


def _kernel_environment(app) -> None:
    startup = Path(app.outdir).parent / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DOCS / "_ext" / "kernel_startup.py", startup / "00-docs.py")
    os.environ["IPYTHONDIR"] = str(startup.parents[1])


# The entry points' arguments are the tables of the entry-point-options directive below each of them (name, type,
# default, flag and help, from the options' one definition); the same text in their docstrings' Parameters section
# (for help() in a notebook) would say it all twice on the page.
TABLED = {"jupyter_dist.hpo", "jupyter_dist.pbt", "jupyter_dist.ablation", "jupyter_dist.data_parallel"}


def _without_parameters(app, what, name, obj, options, lines) -> None:
    if name in TABLED and "Parameters" in lines:
        del lines[lines.index("Parameters") :]


def _links_to_tutorials(app, doctree) -> None:
    """A page's link to ../tutorials/X.ipynb names the tutorial page: Sphinx resolves the link's path, and the
    path of a tutorial, a link to notebooks/X.ipynb, resolves to the notebook, outside the site's sources."""
    from sphinx import addnodes

    notebooks = str(ROOT / "notebooks") + "/"
    for ref in doctree.findall(addnodes.pending_xref):
        if ref.get("refdomain") == "doc" and ref.get("reftarget", "").startswith(notebooks):
            ref["reftarget"] = "tutorials/" + ref["reftarget"].removeprefix(notebooks)


def setup(app):
    app.connect("builder-inited", _kernel_environment)
    app.connect("doctree-read", _links_to_tutorials)
    app.connect("autodoc-process-docstring", _without_parameters, priority=100)  # before napoleon reads it


# Every notebook and every {code-cell} runs at each build, in a real kernel on the embedded cluster; an error in
# one fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_in_temp = True  # what the notebooks write (quickstart_report.html) stays out of the sources
nb_execution_raise_on_error = True
nb_execution_show_tb = True


def _patient_kernel_start() -> None:
    """Wait up to 5 minutes for each page's kernel to start, not nbclient's 60 s.

    On a loaded machine (the test suite's other worker, a CPU hog beside it) a kernel that imports plotly in its
    startup file took longer than 60 s to answer, and the page failed with "Kernel didn't respond". MyST-NB passes
    only the cell timeout to nbclient, so the keyword is added where MyST-NB calls jupyter-cache (the `-j` workers
    fork after this file is read, so they inherit it)."""
    import functools

    from myst_nb.core.execute import direct

    direct.single_nb_execution = functools.partial(direct.single_nb_execution, startup_timeout=300)


_patient_kernel_start()
# The cell view's bundle carries the JupyterLab extension's own MIME type beside its HTML; MyST-NB warns of any
# type it has no renderer for before it picks the HTML (tests/docs checks the HTML is in the pages).
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "pydata_sphinx_theme"
html_title = f"jupyter_dist {release}"
html_static_path = ["_static"]
html_css_files = ["side-by-side.css"]  # the Coming from pages' pairs of cells
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
