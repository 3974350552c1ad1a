"""The documentation says what the code does: the site builds with warnings as errors (broken internal links,
bad markup, a tutorial or a page's code cell that raises), the README's example runs as written, and the facts
stated in several places agree with the code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import tomllib
from nbclient import NotebookClient

import jupyter_dist
from jupyter_dist.protocol import ExperimentState, TrialState
from jupyter_dist.trials import _outbox

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# The pages a reader reads: the hand-written docs and the README (docs/measurements keeps raw before/after runs).
PAGES = [README, *(p for p in DOCS.rglob("*.md") if not p.is_relative_to(DOCS / "measurements"))]
PAGES = [p for p in PAGES if not p.is_relative_to(DOCS / "_build")]

pytestmark = pytest.mark.timeout(900)  # the first test waits for the session's docs build


def test_the_docs_build_without_a_warning(docs_build):
    assert docs_build.returncode == 0, docs_build.log[-6000:]
    assert (docs_build.html / "index.html").exists()


def test_pages_show_what_their_cells_ran(docs_build):
    """The executed cells' outputs are in the pages: the cell view's HTML (the finished run's table) and the
    plotly figures, drawn by the plotly.js the site serves itself (it opens from disk, offline)."""
    page = (docs_build.html / "getting-started.html").read_text()
    # The cell view's HTML: the finished run's status line, then its trials table.
    assert re.search(r"hpo &#x27;train&#x27; completed: 8/8 trials done.*?<table", page, re.S)
    assert "Plotly.newPlot" in page and "cdn.plot.ly" not in page
    scripts = re.findall(r'<script src="([^"]*plotly[^"]*)"', page)
    assert scripts and all((docs_build.html / s.split("?")[0]).exists() for s in scripts), scripts


def test_the_api_reference_has_a_row_for_every_argument_and_every_magic_option(docs_build):
    """Generated from the options' one definition (docs/_ext): a parameter of an entry point, or an option of a
    magic, with no row of its own on the built pages fails here."""
    import inspect

    from jupyter_dist.magics import DistributeMagics

    experiments = (docs_build.html / "api" / "experiments.html").read_text()
    for entry_point in ("hpo", "pbt", "ablation", "data_parallel"):
        for name in inspect.signature(getattr(jupyter_dist, entry_point)).parameters:
            row = f'id="{entry_point.replace("_", "-")}-argument-{name.replace("_", "-")}"'
            assert row in experiments, f"no row for {entry_point}({name}=) in the API reference"
    magics = (docs_build.html / "api" / "magics.html").read_text()
    for magic in ("distribute", "distribute_cluster"):
        for action in getattr(DistributeMagics, magic).parser._actions:
            if action.option_strings and action.option_strings[0] != "-h":
                row = f'id="{magic.replace("_", "-")}-option-{action.option_strings[0].strip("-")}"'
                assert row in magics, f"no row for %{magic} {action.option_strings[0]} in the API reference"


def test_links_between_pages_lead_somewhere():
    """Every relative link of a page, as GitHub follows it: to a file of the checkout (docs/tutorials/ holds the
    notebooks, linked from notebooks/)."""
    dead = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                dead.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not dead, dead


def test_readme_links_lead_somewhere():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_readme_lists_every_example_notebook():
    text = README.read_text()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{notebook.name}" in text, f"README does not list {notebook.name}"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_example_runs_as_written(tmp_path):
    """The README's code blocks, in order, in a real kernel on the embedded cluster."""
    blocks = _python_blocks(README.read_text())
    assert any("%%distribute" in b for b in blocks)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(b) for b in blocks])
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    shown = nb.cells[-1].outputs[-1]["data"]["text/plain"]
    assert "Best(trial_id=" in shown


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_code_blocks_are_valid_python(page):
    """The examples not executed at build time (fragments, a cluster's address) still parse, magics included."""
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    for block in _python_blocks(page.read_text()):
        lines = block.splitlines()
        if lines[0].startswith("%%"):  # a cell magic's body is a string to IPython: check it as Python too
            options = 1 + next((i for i, line in enumerate(lines[1:]) if not line.startswith(" ")), 0)
            lines = lines[options:]
        try:
            compile(transform("\n".join(lines)), str(page), "exec")
        except SyntaxError as exc:
            pytest.fail(f"{page.relative_to(ROOT)}: a python block does not parse ({exc}):\n{block}")


def test_states_are_listed_as_the_code_has_them():
    text = (DOCS / "how-to" / "hpo.md").read_text()
    listed = set(re.findall(r'"(\w+)"', re.search(r"exp\.state +#(.*)", text).group(1)))
    assert listed == {s.value for s in ExperimentState}
    trial_states = re.search(
        r"A trial's `state` in `exp.trials` is one of these:\n\n(.*?)\n\n", text, re.S
    ).group(1)
    assert set(re.findall(r"^- `(\w+)`", trial_states, re.M)) == {s.value for s in TrialState}


def test_one_figure_for_how_long_a_report_waits():
    """Reports nobody decides on wait on their worker for company: every page, benchmark and docstring that says
    how long says the figure the code uses."""
    sources = [*PAGES, *(ROOT / "bench").glob("*.py"), *(ROOT / "jupyter_dist").rglob("*.py")]
    said = {
        (path.name, figure)
        for path in sources
        for figure in re.findall(
            r"reports?\b[^.]{0,160}?\bwaits?\s+up\s+to\s+([\d.]+)\s+s", path.read_text(), re.S
        )
    }
    assert said, "no page says how long a report may wait"
    assert {figure for _, figure in said} == {f"{_outbox.RELAXED:g}"}, said


def test_versions_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    extension = json.loads((ROOT / "labextension" / "package.json").read_text())["version"]
    # the newest released version's heading, under the changes not released yet ("## Unreleased", as Keep a
    # Changelog writes it)
    changelog = re.search(r"^## (?!Unreleased)(\S+)", (DOCS / "changelog.md").read_text(), re.M).group(1)
    assert project == jupyter_dist.__version__ == extension == changelog


INTERNAL = re.compile(r"\bissue \d+|DESIGN\.md|TECH-NOTES|STYLE\.md|design's contract|\.\./shared", re.I)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_reference_a_reader_cannot_follow(page):
    found = INTERNAL.findall(page.read_text())
    assert not found, f"{page.relative_to(ROOT)} refers to {found}"


def test_readme_performance_is_read_from_the_results():
    """The README's headline figures are generated from bench/results (scripts/readme_performance.py)."""
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme_performance.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_readme_fits_a_screen_and_starts_with_the_two_commands():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150
    first_block = lines[lines.index("```bash") + 1 : lines.index("```")]
    assert [line.split()[:2] for line in first_block] == [["make", "quickstart"], ["make", "test"]]
