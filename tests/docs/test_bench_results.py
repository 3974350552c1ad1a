"""The pages with benchmark figures (the performance pages, and the guide to choosing a sampler) against
bench/results/*.json: every result file has a section, every table and plot the pages name exists and reads its
JSON without a missing key, and a page built with the extension shows the figures of the JSON itself
(docs/_ext/bench_results/)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The pages whose bench directives are checked: the performance pages and the guide that quotes bench_samplers.
PAGES = [*sorted((ROOT / "docs" / "performance").glob("*.md")), ROOT / "docs" / "choosing.md"]
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import bench_results  # noqa: E402

# ```{bench-table} NAME, then its options (":table: KEY") up to the first line that is not one
DIRECTIVE = re.compile(r"^```\{(bench-[a-z]+)\}[ \t]*(\S*)\n((?::[a-z]+:.*\n)*)", re.M)


def directives() -> list[tuple[str, str, str, dict[str, str]]]:
    """(page, directive, argument, options) for every bench directive of the pages."""
    found = []
    for page in PAGES:
        for kind, arg, opts in DIRECTIVE.findall(page.read_text()):
            options = dict(re.findall(r"^:([a-z]+):[ \t]*(.*)$", opts, re.M))
            found.append((page.name, kind, arg, options))
    return found


def result_names() -> list[str]:
    return sorted(p.stem for p in RESULTS.glob("*.json"))


def test_every_result_file_has_a_section_with_its_source_and_a_table():
    text = "\n".join(p.read_text() for p in PAGES)
    used = directives()
    for name in result_names():
        assert f"(bench-{name})=" in text, (
            f"bench/results/{name}.json has no section (bench-{name})= in docs/performance or docs/choosing.md"
        )
        kinds = {kind for _, kind, arg, _ in used if arg == name}
        assert {"bench-source", "bench-table"} <= kinds, (
            f"{name}: its section needs a bench-source and a bench-table"
        )


def test_the_directives_name_result_files_tables_and_plots_that_exist():
    names = set(result_names())
    for page, kind, arg, options in directives():
        if kind == "bench-overview":
            continue
        assert arg in names, f"{page}: {kind} {arg}: no bench/results/{arg}.json"
        registry, option = {"bench-table": ("TABLES", "table"), "bench-plot": ("PLOTS", "plot")}.get(
            kind, (None, "")
        )
        if registry:
            choices = getattr(bench_results, registry)[arg]
            assert options.get(option, next(iter(choices))) in choices, f"{page}: {kind} {arg} {options}"


def test_every_table_and_plot_reads_its_json():
    """A key renamed in a benchmark's JSON fails here (MissingKey), not on a page showing stale figures."""
    for name, tables in bench_results.TABLES.items():
        for key, make in tables.items():
            header, rows = make(bench_results.load(name))
            assert rows, (name, key)
            assert all(len(row) == len(header or rows[0]) for row in rows), (name, key)
    for name, plots in bench_results.PLOTS.items():
        for key, plot in plots.items():
            assert bench_results.figure(plot, bench_results.load(name)).data, (name, key)


def test_a_missing_key_is_an_error_and_an_optional_one_a_dash():
    r = {"a": {"wall_s": 0.0123, "rate_per_s": 1234.5, "n": 7}}
    with pytest.raises(bench_results.MissingKey):
        bench_results.pairs(r, {"x": "a.renamed_s"})
    assert bench_results.pairs(r, {"x": "a.renamed_s?"}) == (None, [["x", "–"]])
    assert bench_results.pairs(r, {"t": "a.wall_s", "r": "a.rate_per_s", "n": "a.n"})[1] == [
        ["t", "12.3 ms"],
        ["r", "1,234"],
        ["n", "7"],
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A page using every directive, built with the extension alone (MyST, no notebooks, no theme)."""
    from sphinx.application import Sphinx

    src = tmp_path_factory.mktemp("src")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'docs' / '_ext')!r})\n"
        "extensions = ['myst_parser', 'bench_results']\n"
    )
    sections = "\n".join(f"(bench-{name})=\n## {name}\n" for name in result_names())
    (src / "index.md").write_text(
        "# Performance\n\n```{bench-overview}\n```\n\n"
        "```{bench-source} dispatch\n```\n\n```{bench-table} dispatch\n:table: rates\n```\n\n"
        "```{bench-table} summary\n:table: figures\n```\n\n"
        "```{bench-table} samplers\n:table: single\n```\n\n```{bench-table} samplers\n:table: startup\n```\n\n"
        "```{bench-plot} scalability\n:plot: efficiency\n```\n\n" + sections
    )
    warnings = io.StringIO()
    out = src.parent / "html"
    app = Sphinx(src, src, out, src.parent / "doctrees", "html", status=None, warning=warnings, freshenv=True)
    app.build()
    assert warnings.getvalue() == ""
    return out


def test_the_built_page_shows_the_json_figures(built):
    from docutils.nodes import make_id

    html = (built / "index.html").read_text()
    dispatch = json.loads((RESULTS / "dispatch.json").read_text())
    assert f"<td><p>{dispatch['ours']['median_per_s']:,.0f}</p></td>" in html
    assert dispatch["git"]["commit"][:7] in html
    # run_all.py's own FIGURES, from the latest result files
    ddp = json.loads((RESULTS / "ddp.json").read_text())
    assert f"{ddp['median_samples_per_s']['ranks_2']:,.0f}" in html
    # every result file in the overview, linked to its section
    for name in result_names():
        assert f'href="#{make_id(f"bench-{name}")}"' in html


def test_the_plots_draw_with_the_local_plotly_js(built):
    html = (built / "index.html").read_text()
    assert 'id="bench-scalability-efficiency"' in html
    assert '<script src="_static/plotly.min.js"></script>' in html
    assert "cdn" not in html.lower()
    assert (built / "_static" / "plotly.min.js").stat().st_size > 1_000_000
    efficiency = json.loads((RESULTS / "scalability.json").read_text())["efficiency"]["1600x1s"]
    assert json.dumps(efficiency) in html  # the plotted value, as plotly serialises it


def test_the_sampler_guide_s_tables_show_the_json_and_the_installed_optuna_s_defaults(built):
    """docs/choosing.md's figures: the median distance to the minimum at the largest budget, and each learning
    sampler's random start, which bench_samplers read from Optuna's signatures and must still be Optuna's."""
    import inspect

    import optuna

    html = (built / "index.html").read_text()
    r = json.loads((RESULTS / "samplers.json").read_text())
    last = str(r["single"]["budgets"][-1])
    for name, run in r["single"]["samplers"].items():
        assert f"<td><p>{bench_results.fmt(run['regret_median'][last])}</p></td>" in html, name
    for name, start in r["startup"].items():
        default = inspect.signature(getattr(optuna.samplers, start["optuna_class"])).parameters[
            start["argument"]
        ]
        assert start["default"] == default.default, (
            f"{name}: samplers.json says {start['argument']}={start['default']}, the installed Optuna "
            f"{default.default}: run bench/bench_samplers.py again"
        )
        assert f"<td><p>{start['default']}</p></td>" in html, name
