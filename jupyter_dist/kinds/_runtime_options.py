"""The magic's options for how trials use the cluster (``--max-failures``, ``--cpus-per-trial``, ``--resources``),
shared by the kinds that offer them, and what they become as the entry points' arguments."""

from __future__ import annotations

from typing import Any

from ._base import option
from ._options import parse_resources

__all__ = ["RESOURCES_OPTION", "TRIAL_RUNTIME_OPTIONS", "runtime_arguments"]

RESOURCES_OPTION = option(
    "--resources",
    help="Dask worker resources each trial (each rank) needs, e.g. MEM=4e9,GPU=1, on workers declaring them",
)
TRIAL_RUNTIME_OPTIONS = (
    option(
        "--max-failures",
        type=int,
        help="hpo, ablation: runs more of a trial whose function raised (default 0)",
    ),
    option("--cpus-per-trial", type=int, help="hpo, ablation: cores (torch threads) per trial"),
    RESOURCES_OPTION,
)


def runtime_arguments(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with ``--resources NAME=AMOUNT,...`` as the entry points' ``resources`` dict."""
    arguments = dict(given)
    if "resources" in arguments:
        arguments["resources"] = parse_resources(arguments["resources"])
    return arguments
