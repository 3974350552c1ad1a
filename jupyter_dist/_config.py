"""jupyter_dist's defaults in dask config, from the YAML file shipped beside this module.

As dask-labextension and dask-gateway do: the shipped file holds every key with its default and a comment, and
anything the user or the admin sets (a YAML file of theirs, DASK_* environment variables) is merged over it.
"""

from __future__ import annotations

from pathlib import Path

import dask.config
import yaml

DEFAULTS_FILE = Path(__file__).with_name("jupyter_dist.yaml")


def load_defaults() -> None:
    with DEFAULTS_FILE.open() as f:
        defaults = yaml.safe_load(f)
    dask.config.update_defaults(defaults)


load_defaults()
