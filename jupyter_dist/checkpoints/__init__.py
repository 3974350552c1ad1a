"""Checkpoints a re-run trial resumes from: ``checkpoint()`` and ``restore()`` in the training function
(_save), the folders they live in on any fsspec filesystem (_files), and where an experiment keeps them (_plan).
"""

from ._files import Saved, complete, copy_checkpoint, latest, remove
from ._plan import checkpoint_plan, checkpoint_settings
from ._save import Checkpoint, checkpoint, restore

__all__ = [
    "Checkpoint",
    "Saved",
    "checkpoint",
    "checkpoint_plan",
    "checkpoint_settings",
    "complete",
    "copy_checkpoint",
    "latest",
    "remove",
    "restore",
]
