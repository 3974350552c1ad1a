"""The performance pages' tables and plots, read from bench/results/*.json when the docs are built.

No table or plot on those pages is typed by hand: each comes from a result file through TABLES or PLOTS below.

    ```{bench-table} dispatch       a table of bench/results/dispatch.json: TABLES["dispatch"][...]
    :table: rates                   which one (default: the benchmark's first)
    :caption: Trials per second     (optional)
    ```

    ```{bench-plot} scalability     a plotly figure: PLOTS["scalability"][...]
    :plot: efficiency               which one (default: the benchmark's first)
    :caption: ...                   (optional)
    ```

    ```{bench-source} dispatch      when, at which commit, on what machine; its target and whether it was met
    ```

    ```{bench-overview}             a row per result file, linking its section (label "bench-<name>")
    ```

A table is a function of the result (the JSON as a dict) returning a header (or None) and rows of text. ``grid``,
``rows`` and ``pairs`` build one from paths into the JSON: "a.b.c"; "a.b?" where the key may be missing;
"a.b:ms" for an explicit unit, else the unit follows from the key names (``_s`` seconds, ``_ms``, ``_mb``,
``share``, ``_pct``, ``ratio``/``_over_``/``_vs_``...; see ``unit_of``). A path the JSON lacks is an error, which
fails a ``-W`` build: a renamed key cannot leave a page showing stale figures. The summary's figures are
bench/run_all.py's own FIGURES extractors.

Plots are plotly figures embedded as divs; plotly.min.js (the copy bundled with the plotly package, no CDN) is
copied into the build's _static and loaded only by pages that have a plot.
"""

from ._directives import (
    VERSIONS_SHOWN,
    BenchOverview,
    BenchPlot,
    BenchSource,
    BenchTable,
    _add_plotly,
    _copy_plotly,
    _has_plot,
    table_node,
)
from ._plots import PLOTS, SYMBOLS, Plot, figure
from ._tables import TABLES
from ._values import (
    BENCHMARKS,
    FIGURES,
    RESULTS,
    ROOT,
    STOP_SOURCES,
    STREAM_RUNS,
    Keys,
    MissingKey,
    Table,
    cell,
    each,
    fmt,
    get,
    grid,
    humanize,
    leaves,
    load,
    met_text,
    pairs,
    parse,
    result_names,
    rows,
    summary_figures,
    unit_of,
)

__all__ = [
    "BENCHMARKS",
    "FIGURES",
    "PLOTS",
    "RESULTS",
    "ROOT",
    "STOP_SOURCES",
    "STREAM_RUNS",
    "SYMBOLS",
    "TABLES",
    "VERSIONS_SHOWN",
    "BenchOverview",
    "BenchPlot",
    "BenchSource",
    "BenchTable",
    "Keys",
    "MissingKey",
    "Plot",
    "Table",
    "_add_plotly",
    "_copy_plotly",
    "_has_plot",
    "cell",
    "each",
    "figure",
    "fmt",
    "get",
    "grid",
    "humanize",
    "leaves",
    "load",
    "met_text",
    "pairs",
    "parse",
    "result_names",
    "rows",
    "setup",
    "summary_figures",
    "table_node",
    "unit_of",
]


def setup(app):
    app.add_directive("bench-table", BenchTable)
    app.add_directive("bench-plot", BenchPlot)
    app.add_directive("bench-source", BenchSource)
    app.add_directive("bench-overview", BenchOverview)
    app.connect("html-page-context", _add_plotly)
    app.connect("build-finished", _copy_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
