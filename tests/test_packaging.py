"""The package as users get it: the wheel `make dist` builds (python -m build: an sdist, then the wheel from it),
installed with pip into a fresh virtualenv, the way a user adds it to an existing environment or a hub's image. No
editable checkout and no Node.js build: the JupyterLab extension comes prebuilt in the wheel, and the server
extension is enabled by the wheel's own config file.

The environment the wheel joins already holds the user's torch and JupyterLab and every package the wheel
requires (what `pip install` would fetch): rather than install them again on each run (~1 minute on 2 cores), the
fresh virtualenv sees them as this test's interpreter has them installed, through a folder of links to exactly
those distributions (the wheel's requirements and theirs, read from its METADATA, plus torch and JupyterLab),
never to the checkout's editable jupyter_dist. pip then installs the wheel, finding its requirements satisfied.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _listing(args: list[str], cwd: Path) -> str:
    """What a `jupyter ... list` command prints (to stdout and stderr), without its colours."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


# The user's own, installed before the wheel (README: torch first, then the package; JupyterLab it joins).
USERS_OWN = ("torch", "jupyterlab")


def _installed_closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The distributions installed here that ``requirements`` need, theirs included (by normalised name)."""
    found: dict[str, metadata.Distribution] = {}
    seen: set[tuple[str, str]] = set()  # (name, extra) whose requirements were added
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        try:
            found[name] = dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # pip will fetch it
        for wanted in {"", *requirement.extras} - {extra for n, extra in seen if n == name}:
            seen.add((name, wanted))
            pending += [(Requirement(text), wanted) for text in dist.requires or []]
    return found


def _link_environment(dists: dict[str, metadata.Distribution], env_dir: Path) -> None:
    """Let the virtualenv at ``env_dir`` import ``dists`` (links to their top-level files in one folder on its
    path) and run their commands (``jupyter``...: scripts of its own, as pip writes them)."""
    linked = env_dir / "installed-elsewhere"
    linked.mkdir()
    for dist in dists.values():
        for file in dist.files or []:
            top = file.parts[0]
            if top == ".." or top.endswith(".pth") or (linked / top).exists():
                continue  # scripts and data files; a .pth of a dependency's own; a namespace already linked
            (linked / top).symlink_to(Path(dist.locate_file(top)))
        for entry in dist.entry_points.select(group="console_scripts"):
            script = env_dir / "bin" / entry.name
            module, _, function = entry.value.partition(":")
            script.write_text(
                f"#!{env_dir / 'bin' / 'python'}\nimport sys\nfrom {module} import {function.split('.')[0]}\n"
                f"sys.exit({function}())\n"
            )
            script.chmod(0o755)
    (site_packages,) = (env_dir / "lib").glob("python3*/site-packages")
    (site_packages / "installed-elsewhere.pth").write_text(f"{linked}\n")


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(name).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]


@pytest.mark.timeout(1200)
def test_the_wheel_gives_a_fresh_virtualenv_the_magic_both_extensions_and_a_run(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=tmp_path)
    wheel = next(dist.glob("jupyter_dist-*.whl"))
    assert next(dist.glob("jupyter_dist-*.tar.gz"))

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python, jupyter = str(env_dir / "bin" / "python"), str(env_dir / "bin" / "jupyter")
    required = _installed_closure([*_requirements(wheel), *USERS_OWN])
    assert not {"jupyter-dist", "jupyter_dist"} & set(required)
    assert set(USERS_OWN) <= set(required) and "dask" in required, sorted(required)
    _link_environment(required, env_dir)
    # Installed as a user installs it, its requirements resolved by pip (here: found already installed).
    installed = _run([python, "-m", "pip", "install", str(wheel), "jupyterlab>=4"], cwd=tmp_path)
    assert (
        "Successfully installed jupyter_dist-" in installed
        or "Successfully installed jupyter-dist-" in installed
    )

    # Run from elsewhere: the checkout must not be what gets imported.
    where = _run([python, "-c", "import jupyter_dist; print(jupyter_dist.__file__)"], cwd=tmp_path)
    assert where.startswith(str(env_dir))
    labextensions = _listing([jupyter, "labextension", "list"], tmp_path)
    assert re.search(r"jupyter-dist v[\d.]+ enabled\s+OK \(python, jupyter_dist\)", labextensions), (
        labextensions
    )
    assert (env_dir / "share/jupyter/labextensions/jupyter-dist/static/style.js").exists()
    servers = _listing([jupyter, "server", "extension", "list"], tmp_path)
    assert re.search(r"jupyter_dist enabled", servers) and re.search(r"jupyter_dist [\d.]+ OK", servers), (
        servers
    )

    run = """
import IPython, json
import jupyter_dist as jd
from jupyter_dist import space

shell = IPython.InteractiveShell.instance()
shell.run_line_magic("load_ext", "jupyter_dist")

def train(x=0.0):
    for step in range(3):
        jd.report(step=step, score=x * step)
    return {"score": x * 3}

exp = jd.hpo(train, {"x": space.uniform(0, 1)}, trials=4, metric="score", progress=False, store=False)
print(json.dumps({"magic": "distribute" in shell.magics_manager.magics["cell"], "state": str(exp.state),
                  "trials": len(exp.trials)}))
jd.close_local_cluster()
"""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [python, "-c", run], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "magic": True,
        "state": "completed",
        "trials": 4,
    }
