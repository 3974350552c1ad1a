"""Run at the start of every kernel the docs build executes a page in (an IPython startup file).

The page's experiments are recorded in a store of its own, in the temporary folder its kernel runs in: pages are
executed side by side, and a store they shared would rename a run whose name another page's run had taken.

Plotly figures become a <div> and the script that draws it, as wide as the page's column, without plotly.js (the site serves its own copy, see
bench_results._add_plotly) and without MathJax: the pages then work from disk, offline, and carry plotly.js once
instead of once per figure.
"""

import os

import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer


class OfflineDivRenderer(MimetypeRenderer):
    def to_mimebundle(self, fig_dict):
        # A figure sized for a notebook's width fills the page's column instead (and follows it).
        layout = {k: v for k, v in fig_dict.get("layout", {}).items() if k != "width"}
        html = pio.to_html(
            {**fig_dict, "layout": layout},
            config={"responsive": True},
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            default_width="100%",
            default_height=525,
            validate=False,
        )
        return {"text/html": html}


pio.renderers["docs"] = OfflineDivRenderer()
pio.renderers.default = "docs"

os.environ["JUPYTER_DIST_STORE"] = os.path.abspath("experiments.sqlite")
