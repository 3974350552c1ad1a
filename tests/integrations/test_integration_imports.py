"""What importing the integrations costs and says: jupyter_dist alone imports no framework; a missing framework
is an ImportError saying what to install (the extra that brings it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("lightning", "pytorch_lightning", "transformers", "accelerate")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_jupyter_dist_imports_no_framework():
    done = python(
        "import sys, jupyter_dist, jupyter_dist.integrations\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "install"),
    [
        ("lightning", "lightning.pytorch", "'jupyter_dist[lightning]'"),
        ("pytorch_lightning", "pytorch_lightning", "pytorch-lightning"),
        ("transformers", "transformers", "'jupyter_dist[transformers]'"),
    ],
)
def test_a_missing_framework_says_what_to_install(module, framework, install):
    # A None entry in sys.modules makes Python's own import of that name fail, as when it is not installed.
    done = python(
        f"import sys; sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import jupyter_dist.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"jupyter_dist.integrations.{module} needs {framework!r}, which is not installed here" in done.stdout
    )
    assert f"pip install {install}" in done.stdout
