"""Trials run with large blocks served from the heap, and the worker gets Dask's allocator settings back after.

Observed through glibc's own counters (mallinfo2: bytes in mmapped chunks) inside real worker processes, which
Dask's nanny started with MALLOC_TRIM_THRESHOLD_ set.
"""

import platform
import time

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.trials._allocator import IDLE_BEFORE_RESTORE_S


def _has_mallinfo2() -> bool:
    import ctypes

    return platform.system() == "Linux" and hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")  # glibc >= 2.33


pytestmark = pytest.mark.skipif(not _has_mallinfo2(), reason="glibc >= 2.33 (mallinfo2) only")

BLOCK = 4 << 20  # an activation-sized allocation: over glibc's fixed 128 KiB mmap threshold


def mmapped_by_one_block(size: int = BLOCK) -> dict:
    """How many bytes of mmapped chunks one fresh allocation of ``size`` adds, in this process."""
    import ctypes
    import os

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")
            + ("fordblks", "keepcost")
        ]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    before = libc.mallinfo2().hblkhd
    block = bytearray(size)
    grown = libc.mallinfo2().hblkhd - before
    del block
    return {"mmapped": grown, "trim_env": os.environ.get("MALLOC_TRIM_THRESHOLD_")}


@pytest.fixture
def fresh_worker():
    """A worker process of its own, with no allocation history: free chunks left by other tests' trials would
    serve a block from the heap whatever the thresholds."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as c,
    ):
        yield c


def test_a_trial_allocates_from_the_heap_and_the_worker_gets_its_settings_back(fresh_worker):
    outside = fresh_worker.submit(mmapped_by_one_block, pure=False).result()
    assert outside["trim_env"] is not None  # the situation this is about: Dask fixed the thresholds
    assert outside["mmapped"] >= BLOCK  # so a plain task's big block is a fresh mmap

    def trial(x=0.0):
        import jupyter_dist

        measured = mmapped_by_one_block()
        jupyter_dist.report(step=0, mmapped=measured["mmapped"])
        return {"mmapped": measured["mmapped"]}

    exp = jd.hpo(
        trial,
        {"x": space.uniform(0, 1)},
        trials=2,
        metric="mmapped",
        mode="min",
        cluster=fresh_worker,
        progress=False,
    )
    assert exp.state == "completed"
    assert list(exp.trials["value"]) == [0, 0]  # served from the heap inside every trial

    # Trials that follow each other keep the trial settings; the worker's own come back once it has been idle.
    time.sleep(IDLE_BEFORE_RESTORE_S + 1.0)
    # Bigger than what the trials freed (a free chunk would serve it from the heap whatever the thresholds): an
    # mmap again only if the worker's own threshold is back.
    after = fresh_worker.submit(mmapped_by_one_block, 2 * BLOCK, pure=False).result()
    assert after["mmapped"] >= 2 * BLOCK
