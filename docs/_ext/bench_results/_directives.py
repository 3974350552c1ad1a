"""The directives (bench-table, bench-plot, bench-source, bench-overview), the source, machine and commit they
show, and the hooks that load plotly.js on the pages that draw and copy it into the build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.fileutil import copy_asset_file

from ._plots import PLOTS, figure
from ._tables import TABLES
from ._values import (
    BENCHMARKS,
    RESULTS,
    ROOT,
    MissingKey,
    _when,
    fmt,
    get,
    humanize,
    leaves,
    load,
    met_text,
    result_names,
    unit_of,
)


# --- the directives -------------------------------------------------------------------------------------------
def table_node(header: list[str] | None, body: list[list[str]], caption: str | None) -> nodes.table:
    def row(cells: list[str | nodes.Node]) -> nodes.row:
        return nodes.row(
            "", *(nodes.entry("", c if isinstance(c, nodes.Node) else nodes.paragraph(text=c)) for c in cells)
        )

    width = len(header or body[0])
    table = nodes.table(classes=["bench-table"])
    if caption:
        table += nodes.title(text=caption)
    group = nodes.tgroup(cols=width)
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in range(width))
    if header:
        group += nodes.thead("", row(header))
    group += nodes.tbody("", *(row(cells) for cells in body))
    return table


class _Bench(SphinxDirective):
    required_arguments = 1
    option_spec = {"caption": directives.unchanged}
    registry: dict[str, dict[str, Any]] = {}
    key_option = ""

    def result(self) -> tuple[str, dict]:
        name = self.arguments[0]
        path = RESULTS / f"{name}.json"
        if not path.exists():
            raise self.error(f"{self.name}: there is no {path.relative_to(ROOT)}")
        self.env.note_dependency(str(path))
        if name == "summary":  # its figures table reads the benchmarks' own files
            for other in BENCHMARKS:
                self.env.note_dependency(str(RESULTS / f"{other}.json"))
        return name, load(name)

    def chosen(self, name: str) -> tuple[str, Any]:
        choices = self.registry.get(name)
        if not choices:
            raise self.error(f"{self.name}: nothing is defined for {name!r} in docs/_ext/bench_results/")
        key = self.options.get(self.key_option) or next(iter(choices))
        if key not in choices:
            raise self.error(
                f"{self.name} {name}: no {self.key_option} {key!r}; choose from {', '.join(choices)}"
            )
        return key, choices[key]

    def missing(self, name: str, key: str, error: KeyError) -> Exception:
        what = error if isinstance(error, MissingKey) else f"no key {error}"
        return self.error(f"{self.name} {name} ({key}): bench/results/{name}.json has {what}")


class BenchTable(_Bench):
    """A table of a result file: TABLES[name][:table:]."""

    option_spec = {**_Bench.option_spec, "table": directives.unchanged}
    registry = TABLES
    key_option = "table"

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        key, make = self.chosen(name)
        try:
            header, body = make(r)
        except KeyError as e:  # MissingKey, or a key a table's own function looked up
            raise self.missing(name, key, e) from None
        return [table_node(header, body, self.options.get("caption"))]


class BenchPlot(_Bench):
    """A plotly figure of a result file: PLOTS[name][:plot:], as a div plotly.min.js draws."""

    option_spec = {**_Bench.option_spec, "plot": directives.unchanged}
    registry = PLOTS
    key_option = "plot"

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        key, plot = self.chosen(name)
        try:
            fig = figure(plot, r)
        except KeyError as e:
            raise self.missing(name, key, e) from None
        html = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"bench-{name}-{key}",
            default_height="440px",
            config={"displaylogo": False, "responsive": True},
            # drawn while the page loads, at the width the column had then: fit the column once it is laid out
            post_script="window.addEventListener('load', () => Plotly.Plots.resize('{plot_id}'));",
        )
        box = nodes.container(classes=["bench-plot"])
        box += nodes.raw("", html, format="html")
        if caption := self.options.get("caption"):
            box += nodes.paragraph(text=caption, classes=["caption"])
        return [box]


VERSIONS_SHOWN = ("jupyter_dist", "dask", "distributed", "optuna", "torch")


def _machine(r: dict, short: bool = False) -> str:
    m, gpu = r["machine"], r.get("gpu", {})
    if short:
        return gpu.get("name") or f"{m['cpu_count']} CPUs, {m['cpu_model']}"
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v and k in VERSIONS_SHOWN)
    where = f"{gpu['name']}, " if gpu.get("name") else ""
    extra = f"; CUDA {gpu['cuda']}, NCCL {gpu['nccl']}" if gpu.get("cuda") else ""
    return f"{where}{m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}; {versions}{extra}"


def _commit(r: dict) -> list[nodes.Node]:
    git = r["git"]
    out: list[nodes.Node] = [nodes.Text("commit "), nodes.literal(text=(git["commit"] or "unknown")[:7])]
    changed = git.get("package_uncommitted_changes")
    if changed:
        out.append(nodes.Text(", with uncommitted changes in "))
        for i, path in enumerate(changed):
            out += [nodes.Text(", ")] if i else []
            out.append(nodes.literal(text=path))
    return out


class BenchSource(_Bench):
    """When, at which commit and on what machine a result was measured, its target and whether it was met."""

    def run(self) -> list[nodes.Node]:
        name, r = self.result()
        fields: list[tuple[str, list[nodes.Node]]] = [
            ("Measured", [nodes.Text(f"{_when(r['timestamp'])}, "), *_commit(r)]),
            ("Machine", [nodes.Text(_machine(r))]),
        ]
        if note := r["git"].get("note"):
            fields.append(("Note", [nodes.Text(note)]))
        if share := get(r, ("cpu_contention", "other_share_of_capacity"), optional=True):
            fields.append(
                ("Other processes", [nodes.Text(f"used {fmt(share, '%')} of the machine's CPU meanwhile")])
            )
        target = r.get("target", r.get("scale_target"))
        if isinstance(target, dict):
            text = "; ".join(f"{humanize(p)}: {fmt(v, unit_of(p, v))}" for p, v in leaves(target))
            fields.append(("Target", [nodes.Text(text)]))
        if (met := r.get("met", r.get("scale_met"))) is not None:
            fields.append(("Target met", [nodes.Text(met_text(met))]))
        out = nodes.field_list(classes=["bench-source"])
        for label, body in fields:
            out += nodes.field(
                "", nodes.field_name(text=label), nodes.field_body("", nodes.paragraph("", "", *body))
            )
        return [out]


class BenchOverview(SphinxDirective):
    """A row per bench/results/*.json: its section (label "bench-<name>"), when, which commit, target met."""

    option_spec = {"caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        body = []
        for name in result_names():
            r = load(name)
            self.env.note_dependency(str(RESULTS / f"{name}.json"))
            link = addnodes.pending_xref(
                "",
                nodes.inline(text=name),
                refdomain="std",
                reftype="ref",
                reftarget=f"bench-{name}",
                refexplicit=False,
                refwarn=True,
            )
            body.append(
                [
                    nodes.paragraph("", "", link),
                    nodes.paragraph("", "", nodes.literal(text=f"{name}.json")),
                    r["timestamp"][:10],
                    nodes.paragraph("", "", nodes.literal(text=(r["git"]["commit"] or "unknown")[:7])),
                    _machine(r, short=True),
                    met_text(r.get("met", r.get("scale_met"))),
                ]
            )
        header = ["benchmark", "result file", "measured", "commit", "machine", "target met"]
        return [table_node(header, body, self.options.get("caption"))]


# --- plotly.js from the plotly package, on the pages that draw (benchmarks and executed cells) -----------
def _has_plot(node: nodes.Node) -> bool:
    """A benchmark's plot, or a figure an executed cell drew (docs/_ext/kernel_startup.py leaves plotly.js out)."""
    if isinstance(node, nodes.raw):
        return "Plotly.newPlot" in node.astext()
    return isinstance(node, nodes.container) and "bench-plot" in node["classes"]


def _add_plotly(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and next(doctree.findall(_has_plot), None) is not None:
        app.add_js_file("plotly.min.js")


def _copy_plotly(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        import plotly

        copy_asset_file(
            Path(plotly.__file__).parent / "package_data" / "plotly.min.js", app.outdir / "_static"
        )
