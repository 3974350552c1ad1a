"""One build of the documentation site for the whole session, as `make docs` builds it: warnings are errors,
and the tutorials and every page's code cells execute in real kernels on the embedded cluster."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@dataclass
class DocsBuild:
    returncode: int
    log: str
    html: Path
    executed: Path  # the executed notebooks and pages, as MyST-NB saved them


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory) -> DocsBuild:
    out = tmp_path_factory.mktemp("docs")
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        # the pages' and tutorials' kernels, one per core at a time (22 of them, ~25 s each, most of it each kernel's
        # fixed cost: its imports, its embedded cluster's start, its first live view's imports)
        "-j",
        "auto",
        "-b",
        "html",
        str(DOCS),
        str(out / "html"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    return DocsBuild(done.returncode, done.stdout + done.stderr, out / "html", out / "jupyter_execute")
