"""Importing without side effects on the caller: a module looked up without importing it, or imported apart.

``sys.modules`` holds a module from the moment its import starts: while another thread is still importing torch (a
worker runs several trials at once, and the first to use torch pays its import), ``sys.modules["torch"]`` is a
partial module whose ``torch.cuda`` does not exist yet ("partially initialized module 'torch' has no attribute
'cuda'"). A module still being initialised is waited for here, through the import system's own per-module lock,
so callers see either nothing or the whole module.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

__all__ = ["imported", "imported_apart"]


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


def imported_apart(name: str) -> ModuleType:
    """``name``, imported the first time on a thread of its own.

    A library that keeps an ImportError it caught (optuna keeps its optional backends', redis and the like, to
    raise when they are used) keeps its traceback, and with it every frame of the importing thread's stack.
    Imported on the kernel's thread in the middle of a run, those are the run's frames, and through their locals
    its search and its study, every finished trial of it, for the kernel's life."""
    if name not in sys.modules:
        importer = threading.Thread(
            target=importlib.import_module, args=(name,), name=f"jupyter_dist-import-{name}"
        )
        importer.start()
        importer.join()
    return importlib.import_module(name)
