"""The package as users get it: the wheel `make dist` builds (python -m build: an sdist, then the wheel from it),
installed with pip into a fresh virtualenv, the way a user adds it to an existing environment or a hub's image. No
editable checkout and no Node.js build: the JupyterLab extension comes prebuilt in the wheel, and the server
extension is enabled by the wheel's own config file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

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


@pytest.mark.timeout(1200)
def test_the_wheel_gives_a_fresh_virtualenv_the_magic_both_extensions_and_a_run(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=tmp_path)
    wheel = next(dist.glob("jupyter_dist-*.whl"))
    assert next(dist.glob("jupyter_dist-*.tar.gz"))

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python, jupyter = str(env_dir / "bin" / "python"), str(env_dir / "bin" / "jupyter")
    # torch first, as the README says (the machine's pip settings find the CPU build); JupyterLab is the user's
    # own, which the extension joins.
    _run([python, "-m", "pip", "install", "-q", "torch==2.13.0"], cwd=tmp_path)
    _run([python, "-m", "pip", "install", "-q", str(wheel), "jupyterlab>=4"], cwd=tmp_path)

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
