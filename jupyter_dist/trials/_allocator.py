"""glibc's allocator tuned for tensors while a trial runs, and put back as the worker had it afterwards.

Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 so that memory goes back to the OS promptly.
Setting any of glibc's malloc variables also switches off its dynamic mmap threshold, so every allocation over
128 KiB (most activations and gradients) is a fresh mmap, zero-filled page by page, and unmapped again when the
tensor is freed: a training step in such a worker ran at 0.86x of the same step in the kernel (bench_ddp). While
trials run, large blocks come from the heap and stay there (the step runs at the kernel's speed); when the last
running trial of the process ends and the worker stays idle for a second, the worker's settings come back and
free memory is handed back to the OS (malloc_trim; the top of a thread's arena shrinks only at that arena's next
free, under the restored threshold).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

# While trials run: blocks up to 32 MiB (glibc's ceiling for the mmap threshold on 64-bit) from the heap, and
# freed memory kept for the next step unless more than 1 GiB sits unused at the heap's top.
TRIAL_MMAP_THRESHOLD = 32 << 20
TRIAL_TRIM_THRESHOLD = 1 << 30
GLIBC_DEFAULT_MMAP_THRESHOLD = 128 << 10
GLIBC_DEFAULT_TRIM_THRESHOLD = 128 << 10

# Once the last running trial of the process has ended, the worker's settings come back only after it stayed idle
# this long: queued trials that follow each other (an HPO run) keep the heap warm instead of handing it to the OS
# at every trial's end and faulting it back in, page by page, at the next one's start.
IDLE_BEFORE_RESTORE_S = 1.0

_lock = threading.Lock()
_idle = threading.Condition(_lock)  # the restorer thread waits on it
_running = 0  # trials of this process inside tensor_friendly_allocator(); threads may run several at once
_tuned = False  # whether the trial settings are in force
_idle_since: float | None = None  # when the last running trial ended (None while one runs)
_restorer: threading.Thread | None = None  # one per process, started at the first trial's end


def _glibc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_libc = _glibc()


def _fixed_by_environment() -> dict[int, int] | None:
    """The thresholds the environment fixed, or None when glibc is left to its dynamic defaults.

    Without any of these variables glibc adapts its mmap threshold to the sizes freed, which already suits
    tensors; calling mallopt would switch that off for good, so the allocator is then left alone.
    """
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    mmap = os.environ.get("MALLOC_MMAP_THRESHOLD_")
    if trim is None and mmap is None:
        return None
    try:
        return {
            M_TRIM_THRESHOLD: int(trim) if trim is not None else GLIBC_DEFAULT_TRIM_THRESHOLD,
            M_MMAP_THRESHOLD: int(mmap) if mmap is not None else GLIBC_DEFAULT_MMAP_THRESHOLD,
        }
    except ValueError:  # glibc ignores a malformed value; so do we
        return None


@contextmanager
def tensor_friendly_allocator() -> Iterator[None]:
    """Run the body with large blocks served from the heap (see the module's docstring); no-op off glibc."""
    global _running, _tuned, _idle_since, _restorer
    worker_settings = _fixed_by_environment() if _libc is not None else None
    if worker_settings is None:
        yield
        return
    with _lock:
        _running += 1
        _idle_since = None
        if not _tuned:
            _libc.mallopt(M_MMAP_THRESHOLD, TRIAL_MMAP_THRESHOLD)
            _libc.mallopt(M_TRIM_THRESHOLD, TRIAL_TRIM_THRESHOLD)
            _tuned = True
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                _idle_since = time.monotonic()
                # One thread for the process's life, told when it went idle: a timer thread started at every
                # trial's end cost a thread start per trial (~40 us, a fifth of a brief trial's bookkeeping).
                if _restorer is None and not sys.is_finalizing():  # no thread can start then
                    _restorer = threading.Thread(
                        target=_restore_when_idle,
                        args=(worker_settings,),
                        name="jupyter_dist-allocator",
                        daemon=True,
                    )
                    _restorer.start()
                _idle.notify()


def _restore_when_idle(worker_settings: dict[int, int]) -> None:
    """The restorer thread: put the worker's settings back once no trial has run for IDLE_BEFORE_RESTORE_S."""
    global _tuned
    with _lock:
        while True:
            if not _tuned or _running or _idle_since is None:
                _idle.wait()
                continue
            left = _idle_since + IDLE_BEFORE_RESTORE_S - time.monotonic()
            if left > 0:
                _idle.wait(left)
                continue
            for parameter, value in worker_settings.items():
                _libc.mallopt(parameter, value)
            _libc.malloc_trim(0)
            _tuned = False
