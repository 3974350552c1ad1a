"""Where an experiment keeps its trials' checkpoints (decided in the kernel, before the run starts).

The root is, first found: ``checkpoint_dir=``, the ``JUPYTER_DIST_CHECKPOINTS`` environment variable, dask config
``jupyter_dist.checkpoints.dir``, a ``checkpoints`` folder beside the experiment store, or (no store)
``checkpoints`` in Jupyter's data directory. Each experiment gets ``<root>/<experiment id>``: a resumed run has the
same id, so it finds its trials' checkpoints again. On several hosts the root must be storage every worker
reaches (a shared filesystem path, or an fsspec URL such as ``s3://bucket/checkpoints``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ArgumentError
from ..protocol import CheckpointPlan

KEEP = 2  # checkpoints kept per trial by default: the newest, and one more in case the newest is unreadable


def checkpoint_settings(checkpoint_dir: Any, keep: Any, store_file: str | None) -> dict[str, Any]:
    """The run's checkpoint settings (for its definition's details), checked before anything starts."""
    import dask

    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ArgumentError(f"keep_checkpoints={keep!r}: give how many checkpoints to keep per trial (>= 1)")
    root = checkpoint_dir
    if root is None:
        root = os.environ.get("JUPYTER_DIST_CHECKPOINTS") or dask.config.get(
            "jupyter_dist.checkpoints.dir", None
        )
    if root is None:
        if store_file is not None:
            root = Path(store_file).parent / "checkpoints"
        else:
            from jupyter_core.paths import jupyter_data_dir

            root = Path(jupyter_data_dir()) / "jupyter_dist" / "checkpoints"
    if not isinstance(root, (str, os.PathLike)) or not str(root):
        raise ArgumentError(
            f"checkpoint_dir={checkpoint_dir!r}: give a folder (a path, or an fsspec URL such as s3://bucket/dir)"
        )
    root = str(root)
    if "://" not in root:  # a local path: absolute, as the workers may run elsewhere in the filesystem
        root = str(Path(root).expanduser().resolve())
    return {"root": root, "keep": keep}


def checkpoint_plan(details: dict[str, Any], experiment_id: str) -> CheckpointPlan | None:
    """The plan the trials of this experiment are given (None for a run stored before checkpoints existed)."""
    settings = details.get("checkpoints")
    if not settings:
        return None
    return CheckpointPlan(f"{settings['root'].rstrip('/')}/{experiment_id}", settings["keep"])
