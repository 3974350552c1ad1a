"""A trial's random numbers: Python's ``random``, NumPy's global generator and torch's seeded before its function
runs, from the trial's seed (protocol/_seeds.py), so that the same seed gives the same values trial by trial.

The global generators are what a notebook's training function draws from without saying so (``random.shuffle``,
``np.random.rand``, ``torch.randn``, a DataLoader's shuffling, dropout). Python's and NumPy's are shared with Dask
in a worker process: Dask sizes the data it holds by sampling it with ``random.sample`` on its event loop's thread,
in between the trial's own draws. So for the trial's time the ``random`` and ``numpy.random`` functions answer the
trial's thread from generators of its own, seeded, and every other thread from the shared ones as before. torch's
generator is Dask's to share with nobody: it is seeded. A worker process runs one trial at a time (the embedded
cluster's workers have one thread each); two at once would share torch's.

torch may not be imported when the trial starts (the function imports it itself): it is then seeded as it is
imported, by a finder placed first on ``sys.meta_path`` for the trial's time. Importing torch only to seed it would
cost every worker seconds and hundreds of MB in searches that never use it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import random
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from .._imported import imported

__all__ = ["kept_torch_state", "seeded"]


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Inside, this thread's ``random`` and ``numpy.random`` functions draw from generators started at ``seed``,
    and torch's generator starts there (seeded as it is imported, if it is imported inside). None: as they are."""
    if seed is None:
        yield
        return
    import numpy as np  # pandas's dependency, so always installed; already imported in a worker

    undo = [
        _answer_this_thread(random, random._inst, random.Random(seed)),
        _answer_this_thread(np.random, np.random.mtrand._rand, np.random.RandomState(seed)),
    ]
    finder = None
    if "torch" in sys.modules:
        # importing waits for another thread still running torch's __init__ (a second trial in this process):
        # the module it put in sys.modules is not whole yet
        _seed_torch(importlib.import_module("torch"), seed)
    else:
        finder = _SeedTorchOnImport(seed)
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        for restore in undo:
            restore()
        if finder is not None:
            with contextlib.suppress(ValueError):  # already gone: torch was imported inside
                sys.meta_path.remove(finder)


def _answer_this_thread(module: ModuleType, shared: Any, own: Any) -> Callable[[], None]:
    """``module``'s functions that are methods of ``shared`` (``random.random`` is ``random._inst.random``) answer
    this thread from ``own``'s methods and other threads from ``shared``'s; returns what puts them back. Code that
    imported a function by name (``from random import randint``) keeps the shared one, as other threads do."""
    thread = threading.get_ident()
    replaced = {}
    for name, function in list(vars(module).items()):
        if getattr(function, "__self__", None) is shared:
            replaced[name] = function
            setattr(module, name, _per_thread(function, getattr(own, name), thread))

    def restore() -> None:
        for name, function in replaced.items():
            setattr(module, name, function)

    return restore


def _per_thread(shared: Callable, own: Callable, thread: int) -> Callable:
    def answer(*args, **kwargs):
        return (own if threading.get_ident() == thread else shared)(*args, **kwargs)

    answer.__name__ = answer.__qualname__ = getattr(shared, "__name__", "answer")
    answer.__doc__ = shared.__doc__
    return answer


def _seed_torch(torch, seed: int) -> None:
    # torch.manual_seed also queues seeds for MPS and XPU and records a traceback for lazy CUDA seeding: ~165 us a
    # trial on a CPU-only worker, against ~3 us for the generators a trial can use here.
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


@contextlib.contextmanager
def kept_torch_state() -> Iterator[None]:
    """torch's generator as it was before, after: a trial re-run in the kernel (``exp.reproduce``) leaves the
    notebook's own torch draws where they were (its ``random`` and NumPy ones are never touched)."""
    torch = imported("torch")
    before = torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        if torch is not None and before is not None:
            torch.set_rng_state(before)


class _SeedTorchOnImport(importlib.abc.MetaPathFinder):
    """Seeds torch's generators once torch is imported (then leaves ``sys.meta_path``)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)  # the other finders find torch itself, and it is seeded once
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _SeedingLoader(spec.loader, self.seed, spec)
        return spec


class _SeedingLoader(importlib.abc.Loader):
    """torch's own loader, which seeds its generators once the module has run."""

    def __init__(self, loader, seed: int, spec) -> None:
        self.loader, self.seed, self.spec = loader, seed, spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        # torch reads its own spec's loader (importlib.resources): it sees the real one
        self.spec.loader = module.__loader__ = self.loader
        self.loader.exec_module(module)
        _seed_torch(module, self.seed)
