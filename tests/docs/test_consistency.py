"""What the docs, the help texts and the shipped files say agrees with the code and with pyproject.toml.

Fast checks on the sources, without a docs build or a cluster: the extras the docs list are pyproject's, every
dask config key the package reads is in the shipped YAML, every help naming clusters names every cluster
``use_cluster()`` takes by name, the documented checkpoint folder is the one the code makes, the Optuna
requirement admits only the Optuna the code needs, and development.md names everything ``make test`` installs.
"""

from __future__ import annotations

import ast
import re
from importlib.metadata import version
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

import jupyter_dist
from jupyter_dist.checkpoints._files import step_folder
from jupyter_dist.cluster import NAMED_CLUSTERS, use_cluster
from jupyter_dist.kinds import kind_of
from jupyter_dist.protocol import CheckpointPlan, ExperimentKind

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGE = Path(jupyter_dist.__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# The pages a reader reads (docs/measurements keeps raw before/after runs; _build is generated).
PAGES = [
    ROOT / "README.md",
    *(
        p
        for p in DOCS.rglob("*.md")
        if not any(p.is_relative_to(DOCS / skip) for skip in ("measurements", "_build"))
    ),
]
EXTRA = re.compile(r"jupyter_dist\[([\w,-]+)\]")


# --- extras ---------------------------------------------------------------------------------------------------
def _extras() -> set[str]:
    return set(PYPROJECT["project"]["optional-dependencies"])


def _section(text: str, heading: str) -> str:
    """The text of the Markdown section under ``heading`` (up to the next heading of any level)."""
    after = text.split(heading + "\n", 1)[1]
    return re.split(r"^#+ ", after, maxsplit=1, flags=re.M)[0]


def test_the_extras_table_lists_every_extra_of_pyproject():
    section = _section((DOCS / "api" / "index.md").read_text(encoding="utf-8"), "## Optional extras")
    rows = [line for line in section.splitlines() if line.startswith("| `jupyter_dist[")]
    listed = [extra for row in rows for extra in EXTRA.findall(row)]
    assert len(listed) == len(set(listed)), f"an extra is listed twice: {listed}"
    assert set(listed) == _extras(), (
        f"docs/api/index.md's extras table lists {sorted(listed)}; pyproject.toml's "
        f"[project.optional-dependencies] has {sorted(_extras())}"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_extra_a_page_names_exists(page):
    named = {extra for found in EXTRA.findall(page.read_text(encoding="utf-8")) for extra in found.split(",")}
    assert named <= _extras(), (
        f"{page.relative_to(ROOT)} names extras pyproject.toml lacks: {named - _extras()}"
    )


# --- dask config ------------------------------------------------------------------------------------------------
def _config_keys_read() -> dict[str, str]:
    """Every ``<...>config.get("jupyter_dist.<key>", ...)`` in the package: key -> where."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            owner = node.func.value
            on_config = isinstance(owner, ast.Attribute) and owner.attr == "config"
            on_config = on_config or isinstance(owner, ast.Name) and owner.id == "config"
            key = node.args[0]
            if node.func.attr == "get" and on_config and isinstance(key, ast.Constant):
                if isinstance(key.value, str) and key.value.startswith("jupyter_dist."):
                    found.setdefault(key.value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_shipped_yaml_holds_every_config_key_the_package_reads():
    shipped = yaml.safe_load((PACKAGE / "jupyter_dist.yaml").read_text(encoding="utf-8"))
    read = _config_keys_read()
    assert "jupyter_dist.full-tracebacks" in read, "the scan found no key it should: fix _config_keys_read"
    missing = []
    for key, where in read.items():
        node = shipped
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(f"{key} ({where})")
                break
            node = node[part]
    assert not missing, (
        f"read by the package but not in jupyter_dist/jupyter_dist.yaml (add it, commented): {missing}"
    )


# --- the clusters a help names ----------------------------------------------------------------------------------
def _cluster_helps() -> dict[str, str]:
    from jupyter_dist.magics import DistributeMagics

    helps = {"use_cluster's docstring": use_cluster.__doc__ or ""}
    for kind in ExperimentKind:
        for entry in kind_of(kind).entries():
            if entry.name == "cluster":
                helps[f"{kind}'s cluster= help"] = entry.spec.help
                helps[f"{kind}'s --cluster help"] = entry.spec.short
    for action in DistributeMagics.distribute.parser._actions:
        if "--cluster" in action.option_strings:
            helps["%%distribute --cluster"] = action.help or ""
    for action in DistributeMagics.distribute_cluster.parser._actions:
        if action.dest == "target":
            helps["%distribute_cluster's argument"] = action.help or ""
    return helps


def test_every_help_naming_clusters_names_every_cluster_use_cluster_takes():
    helps = _cluster_helps()
    assert {"%%distribute --cluster", "%distribute_cluster's argument"} <= set(helps)
    assert {"local", "gateway", "slurm"} <= set(NAMED_CLUSTERS)
    lacking = {
        where: [name for name in NAMED_CLUSTERS if not re.search(rf"""['"]{name}['"]""", text)]
        for where, text in helps.items()
    }
    lacking = {where: names for where, names in lacking.items() if names}
    assert not lacking, f"helps that leave out clusters use_cluster() takes by name: {lacking}"


# --- checkpoint folders -------------------------------------------------------------------------------------------
def test_the_documented_checkpoint_folder_is_the_one_the_code_makes():
    page = (DOCS / "how-to" / "checkpoints.md").read_text(encoding="utf-8")
    example = re.search(r"`trial-(\d+)/step-(\d+)/`", page)
    assert example, "docs/how-to/checkpoints.md gives no example folder, `trial-<n>/step-<digits>/`"
    trial, step = example.groups()
    made = step_folder(CheckpointPlan("root", keep=2).trial_directory(int(trial)), int(step))
    assert made == f"root/trial-{trial}/step-{step}", (
        f"the docs say trial-{trial}/step-{step}; the code makes {made}"
    )


# --- the Optuna requirement -----------------------------------------------------------------------------------------
def test_the_optuna_requirement_admits_only_an_optuna_with_constraints():
    # hpo(constraints=), a resumed search and exp.study call Trial.set_constraint and create_trial(constraints=),
    # which Optuna 5 brought.
    optuna = [Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "optuna"]
    assert len(optuna) == 1, "pyproject.toml should require optuna once"
    specifier = optuna[0].specifier
    assert not specifier.contains("4.9"), (
        f"optuna{specifier} admits Optuna 4, which has no Trial.set_constraint"
    )
    assert specifier.contains(version("optuna")), (
        f"the installed Optuna {version('optuna')} is not optuna{specifier}"
    )
    import optuna as installed

    assert hasattr(installed.trial.FrozenTrial, "set_constraint")


# --- what make test installs --------------------------------------------------------------------------------------
def test_development_md_names_everything_make_test_installs():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    prerequisites = re.search(r"^test:(.*)$", makefile, flags=re.M)
    assert prerequisites, "the Makefile has no test target"
    installs = [t for t in prerequisites.group(1).split() if t not in {"setup", "lint"}]
    assert installs, "make test's prerequisites install nothing? fix this test"
    development = (DOCS / "development.md").read_text(encoding="utf-8")
    missing = [t for t in installs if not re.search(rf"^\s*- `{t}`: ", development, flags=re.M)]
    assert not missing, f"make test installs what docs/development.md does not name: {missing}"
