"""A module this process has imported already, looked up without importing it.

``sys.modules`` holds a module from the moment its import starts: while another thread is still importing torch (a
worker runs several trials at once, and the first to use torch pays its import), ``sys.modules["torch"]`` is a
partial module whose ``torch.cuda`` does not exist yet ("partially initialized module 'torch' has no attribute
'cuda'"). A module still being initialised is waited for here, through the import system's own per-module lock,
so callers see either nothing or the whole module.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["imported"]


def imported(name: str) -> ModuleType | None:
    """The module ``name`` if this process imported it (waiting for an import under way in another thread), else
    None: never the first import of it."""
    module = sys.modules.get(name)
    if module is None:
        return None
    if getattr(getattr(module, "__spec__", None), "_initializing", False):
        # import_module takes the module's import lock, so it returns once the other thread's import has finished
        return importlib.import_module(name)
    return module
