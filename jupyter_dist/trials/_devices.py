"""GPUs as per-trial resources: which of a worker's devices each running trial holds, and how much of it.

Dask counts resources (``dask worker --resources GPU=2``) and never runs more trials on a worker than its GPUs
allow, but it does not say *which* devices. This pool does, per worker process. A trial asking for n whole GPUs
holds n devices nobody else holds, the lowest free ones; a trial asking for a share (``gpus_per_trial=0.25``)
holds that much of one device, packed best-fit: onto the device with the least room that still has enough, so
that whole devices stay free for whole-GPU trials. Indices are the worker process's own CUDA numbering (what
``torch.device("cuda", i)`` means there: within its CUDA_VISIBLE_DEVICES when one is set).

A worker declaring a fraction of a GPU (``GPU=0.25``: the embedded cluster's slots, one process per share) has
one device of that much room. CUDA_VISIBLE_DEVICES itself is left alone: it is process-wide, read once when CUDA
starts, and a worker's threads run several trials in one process. The trial gets its devices explicitly
(``jupyter_dist.devices()``).

A shared device's memory is capped for the process (``torch.cuda.set_per_process_memory_fraction``) at the sum
of the shares its trials hold: a trial alone in its process (the embedded cluster's layout) runs out of memory
at its own share, not after its neighbours' memory is gone. torch's cap is per process, so trials sharing one
process share one cap (docs/how-to/gpus.md says how to keep them apart).
"""

from __future__ import annotations

import contextlib
import gc
import math
import threading
from collections.abc import Iterator

from .._imported import imported
from ..errors import PlacementError
from ..protocol import SHARE_EPSILON

_lock = threading.Lock()
_held: dict[int, float] = {}  # device index -> the share of it held by this process's running trials


@contextlib.contextmanager
def holding_gpus(wanted: float, declared: float) -> Iterator[list[int]]:
    """The device indices a trial holds while the block runs: ``wanted`` (whole GPUs, or a share of one) of the
    worker's ``declared`` GPUs."""
    if not wanted:
        yield []
        return
    with _lock:
        taken = _take(wanted, declared)
        shares = {i: min(wanted, 1.0) for i in taken}
        for i, share in shares.items():
            _held[i] = _held.get(i, 0.0) + share
        caps = {i: _held[i] for i in taken} if wanted < 1 else {}
    _cap_memory(caps)
    try:
        yield taken
    finally:
        with _lock:
            for i, share in shares.items():
                left = _held.get(i, 0.0) - share
                if left > SHARE_EPSILON:
                    _held[i] = left
                else:
                    _held.pop(i, None)
            caps = {i: _held.get(i, 1.0) for i in taken} if wanted < 1 else {}
        _cap_memory(caps)


def _take(wanted: float, declared: float) -> list[int]:
    """Which devices a trial asking for ``wanted`` GPUs gets (under the lock)."""
    room = {i: _room(i, declared) - _held.get(i, 0.0) for i in range(math.ceil(declared - SHARE_EPSILON))}
    if wanted < 1:
        fitting = [i for i, free in room.items() if free + SHARE_EPSILON >= wanted]
        if fitting:
            return [min(fitting, key=lambda i: (room[i], i))]  # best fit: the fullest device it fits on
    else:
        free = [i for i, left in room.items() if i not in _held and left + SHARE_EPSILON >= 1]
        if len(free) >= wanted:
            return free[: int(wanted)]
    # Dask's resource accounting makes this a bug, not a busy worker
    busy = ", ".join(f"cuda:{i} {share:g}" for i, share in sorted(_held.items()))
    raise PlacementError(
        f"this worker declares {declared:g} GPUs and its running trials hold {busy}: {wanted:g} more cannot be "
        "given"
    )


def _room(device: int, declared: float) -> float:
    """How much of ``device`` the worker declares: 1, or the fraction of its last one (``GPU=0.25``: 0.25)."""
    return min(1.0, declared - device)


def _cap_memory(caps: dict[int, float]) -> None:
    """Cap each shared device's memory for this process at the shares now held there (1.0: uncapped). Only where
    CUDA is there to cap: on a CPU-only worker (or one whose trials never touched CUDA) there is nothing to do."""
    torch = imported("torch")
    if not caps or torch is None or not torch.cuda.is_available():
        return
    for device, share in caps.items():
        if device < torch.cuda.device_count():
            torch.cuda.set_per_process_memory_fraction(min(1.0, share), device)


def release_gpu_memory(failed: bool = False) -> None:
    """Give the device memory a finished trial's tensors leave in torch's CUDA cache back to the driver, as a
    process of its own would on exit: the next trial on the device, in this worker or another process (the
    kernel, another worker sharing the GPU), finds it free, and ``nvidia-smi`` shows what is really in use.

    After a failure (a CUDA out-of-memory error) tensors kept alive only by reference cycles through the failed
    function's objects are collected first; a full collection costs tens of ms in a worker that imported torch,
    so a trial that ended well is not charged it."""
    torch = imported("torch")
    if torch is not None and torch.cuda.is_initialized():
        if failed:
            gc.collect()
        torch.cuda.empty_cache()
