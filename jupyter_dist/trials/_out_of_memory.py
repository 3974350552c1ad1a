"""A trial that ran out of memory, on a GPU or on the host: told apart from other failures, and said in one line
(where, the trial's share of the device, the peak it reached) above its traceback.

torch is looked up in ``sys.modules``, never imported: a trial that never imported it cannot have run out of GPU
memory, and a worker should not pay torch's import to find that out.
"""

from __future__ import annotations

import gc
import re
import sys

from .._imported import imported
from ._devices import release_gpu_memory

__all__ = ["memory_cause", "out_of_memory", "release_after_out_of_memory", "reset_peaks"]

GIB = 1 << 30
# The device torch names in its message ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total ...").
_GPU_IN_MESSAGE = re.compile(r"\bGPU (\d+)\b")


def out_of_memory(exc: BaseException) -> str | None:
    """``"cuda"`` or ``"host"`` when ``exc`` (or an exception it was raised from, or while handling) is an
    out-of-memory error; None otherwise. The chain counts: a training library often re-raises what it caught."""
    torch = imported("torch")
    cuda_oom = tuple(
        t
        for t in (
            getattr(torch, "OutOfMemoryError", None),
            getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None),
        )
        if isinstance(t, type)
    )
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if cuda_oom and isinstance(current, cuda_oom):
            return "cuda"
        if isinstance(current, MemoryError):
            return "host"
        current = current.__cause__ or current.__context__
    return None


def memory_cause(where: str, exc: BaseException, devices: list[int], share: float) -> str:
    """The cause line: ``out of memory on cuda:0 (this trial's share: 0.25 of the GPU, peak 1.9 GiB)`` or
    ``out of memory on the host (peak RSS 3.1 GiB)``."""
    if where == "host":
        peak = _peak_rss()
        return "out of memory on the host" + (f" (peak RSS {_size(peak)})" if peak else "")
    named = _GPU_IN_MESSAGE.search(str(exc))
    on = [int(named[1])] if named and (not devices or int(named[1]) in devices) else devices
    if share <= 0:
        held = "this trial holds no GPU (gpus_per_trial=0)"
    elif share < 1:
        held = f"this trial's share: {share:g} of the GPU"
    else:
        held = f"this trial holds {share:g} GPU{'s' if share > 1 else ''}"
    peaks = _cuda_peaks(on)
    reached = ", ".join(f"cuda:{d} {_size(p)}" if len(peaks) > 1 else _size(p) for d, p in peaks)
    device = ", ".join(f"cuda:{d}" for d in on) or "a CUDA device"
    return f"out of memory on {device} ({held}" + (f", peak {reached}" if reached else "") + ")"


def reset_peaks(devices: list[int]) -> None:
    """Start the peak counts of the trial's devices afresh, so that the peak an out-of-memory error reports is this
    trial's, not an earlier trial's in the same worker process (trials sharing one process share the counts)."""
    torch = imported("torch")
    if devices and torch is not None and torch.cuda.is_initialized():
        for device in devices:
            torch.cuda.reset_peak_memory_stats(device)


def release_after_out_of_memory() -> None:
    """Give back what the failed trial left: objects held only by reference cycles through its function's frames
    (its model, its batches), then torch's cached device memory, so the next trial on this worker starts with
    the memory the failed one could not get."""
    gc.collect()
    release_gpu_memory()


def _size(nbytes: int) -> str:
    return f"{nbytes / GIB:.1f} GiB" if nbytes >= GIB else f"{nbytes / (1 << 20):.0f} MiB"


def _cuda_peaks(devices: list[int]) -> list[tuple[int, int]]:
    torch = imported("torch")
    if torch is None or not torch.cuda.is_initialized():
        return []
    return [(d, torch.cuda.max_memory_allocated(d)) for d in devices if d < torch.cuda.device_count()]


def _peak_rss() -> int | None:
    """The worker process's peak resident memory in bytes (its current one where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # Windows
        import psutil

        return psutil.Process().memory_info().rss
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux
