"""The kernel's garbage collector while a run goes on: it collects less often, and never rescans what survived.

The kernel process runs the trial loop, Dask's client and (with the embedded cluster) its scheduler, and keeps
what a run accumulates: the study's trials, the records, their curves; every report arrives as a few containers
that live until the store's writer has them (up to 0.5 s). CPython's collections pause every thread while they
run, Dask's IO loop included: a report arriving meanwhile is handed over late. Measured on 2,000 trials x 100
tight-loop reports (store off): full collections every ~0.3 s, taking 16 ms growing to 151 ms with the heap, and
the reports' delivery p99 130 ms (26 ms with the collector off). So while a run goes on:

- what the kernel held when it began, and what survives each full collection since, is frozen (``gc.freeze``):
  full collections scan only what is new (6-33 ms instead, p99 41 ms);
- the youngest generation is collected after RUN_THRESHOLD net new containers instead of CPython's 700, so the
  reports waiting for the writer are not promoted, collection after collection, into the generations a full
  collection scans (3,000 trials x 100 reports, store on: no full collection in the run, p99 35-50 ms where it
  was 59-60).

Objects are still freed when their last reference goes; only cycles wait a little longer (among the frozen, until
the run's end, when everything frozen here is handed back and the thresholds restored).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RUN_THRESHOLD", "quiet_collector"]

RUN_THRESHOLD = 10_000

_lock = threading.Lock()
_runs = 0  # runs of this process inside quiet_collector() (two kernels' threads may run experiments at once)
_unfreeze_at_end = (
    False  # nothing was frozen when the first run began: hand everything back when the last ends
)
_thresholds: tuple[int, int, int] | None = None  # the collector's own, to restore


def _freeze_after_full_collection(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def quiet_collector() -> Iterator[None]:
    """While the body runs: freeze what the process holds, then what survives each full collection, and collect
    the youngest generation less often; when the last run ends, unfreeze (not when the process had frozen objects
    of its own before: they stay as they were) and restore the thresholds."""
    global _runs, _unfreeze_at_end, _thresholds
    with _lock:
        _runs += 1
        if _runs == 1:
            _unfreeze_at_end = gc.get_freeze_count() == 0
            # What the kernel holds already (its libraries, earlier runs) is not the run's to scan either: frozen
            # now (a list splice, not a collection), handed back at the end like the rest.
            gc.freeze()
            gc.callbacks.append(_freeze_after_full_collection)
            _thresholds = gc.get_threshold()
            gc.set_threshold(max(_thresholds[0], RUN_THRESHOLD), *_thresholds[1:])
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0:
                gc.callbacks.remove(_freeze_after_full_collection)
                assert _thresholds is not None  # the first run kept them
                gc.set_threshold(*_thresholds)
                if _unfreeze_at_end:
                    gc.unfreeze()
