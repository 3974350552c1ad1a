"""The package's version, in a module of its own so that any layer can read it without importing the package; and
the versions of what a run depends on, which each experiment records (``exp.reproduce`` compares them)."""

from __future__ import annotations

import functools
import platform

__version__ = "0.5.0"

# What a trial's results depend on beyond its own code.
RECORDED_PACKAGES = ("jupyter_dist", "torch", "dask", "distributed", "optuna")


@functools.cache
def run_versions() -> dict[str, str | None]:
    """Python's version and RECORDED_PACKAGES', looked up once per process: importlib.metadata parses each
    package's METADATA file (~8 ms each, 39 ms of every hpo() call's set-up when asked every time)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {}
    for package in RECORDED_PACKAGES:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    versions["python"] = platform.python_version()
    return versions
