"""The kernel's garbage collector while a run goes on: what was there before, and what survived a full collection
since, is not scanned again until the run ends.

The kernel process runs the trial loop, Dask's client and (with the embedded cluster) its scheduler, and keeps
what a run accumulates: the study's trials, the records, their curves. CPython's full collections scan all of it,
and while they do every thread waits, Dask's IO loop included: a report arriving meanwhile is handed over late.
Measured on 2,000 trials x 100 tight-loop reports (store off): full collections every ~0.3 s, taking 16 ms growing
to 151 ms with the heap, and the reports' delivery p99 130 ms (p99 26 ms with the collector off). Freezing the
survivors of each full collection (``gc.freeze``) keeps the next ones to what is new: 6-33 ms, p99 41 ms. Objects
are still freed when their last reference goes; only cycles among the frozen wait for the run's end, when
everything frozen here is handed back to the collector (whose next full collection, after the run, scans it all
once).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["survivors_frozen"]

_lock = threading.Lock()
_runs = 0  # runs of this process inside survivors_frozen() (two kernels' threads may run experiments at once)
_unfreeze_at_end = (
    False  # nothing was frozen when the first run began: hand everything back when the last ends
)


def _freeze_after_full_collection(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def survivors_frozen() -> Iterator[None]:
    """Freeze what the process holds, then what survives each full collection, while the body runs; unfreeze it
    when the last run ends (not when the process had frozen objects of its own before: they stay as they were)."""
    global _runs, _unfreeze_at_end
    with _lock:
        _runs += 1
        if _runs == 1:
            _unfreeze_at_end = gc.get_freeze_count() == 0
            # What the kernel holds already (its libraries, earlier runs) is not the run's to scan either: frozen
            # now (a list splice, not a collection), handed back at the end like the rest.
            gc.freeze()
            gc.callbacks.append(_freeze_after_full_collection)
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0:
                gc.callbacks.remove(_freeze_after_full_collection)
                if _unfreeze_at_end:
                    gc.unfreeze()
