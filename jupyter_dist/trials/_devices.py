"""GPUs as per-trial resources: which of a worker's devices each running trial holds.

Dask counts resources (``dask worker --resources GPU=2``) and never runs more trials on a worker than its GPUs
allow, but it does not say *which* devices. This pool does, per worker process: a trial asking for n GPUs holds
the n lowest free device indices for its whole run and gives them back when it ends, so two trials on a 2-GPU
worker never share one. Indices are the worker process's own CUDA numbering (what ``torch.device("cuda", i)``
means there: within its CUDA_VISIBLE_DEVICES when one is set, e.g. by dask-cuda).

CUDA_VISIBLE_DEVICES itself is left alone: it is process-wide, read once when CUDA starts, and a worker's
threads run several trials in one process. The trial gets its devices explicitly (``jupyter_dist.devices()``).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

from ..errors import PlacementError

_lock = threading.Lock()
_held: set[int] = set()


@contextlib.contextmanager
def holding_gpus(wanted: int, declared: float) -> Iterator[list[int]]:
    """The device indices a trial holds while the block runs: ``wanted`` of the worker's ``declared`` GPUs."""
    if not wanted:
        yield []
        return
    with _lock:
        free = [i for i in range(int(declared)) if i not in _held]
        if len(free) < wanted:  # Dask's resource accounting makes this a bug, not a busy worker
            raise PlacementError(
                f"this worker declares {declared:g} GPUs and {len(_held)} are held by other trials: "
                f"{wanted} more cannot be given"
            )
        taken = free[:wanted]
        _held.update(taken)
    try:
        yield taken
    finally:
        with _lock:
            _held.difference_update(taken)


def release_gpu_memory(failed: bool = False) -> None:
    """Give the device memory a finished trial's tensors leave in torch's CUDA cache back to the driver, as a
    process of its own would on exit: the next trial on the device, in this worker or another process (the
    kernel, another worker sharing the GPU), finds it free, and ``nvidia-smi`` shows what is really in use.

    After a failure (a CUDA out-of-memory error) tensors kept alive only by reference cycles through the failed
    function's objects are collected first; a full collection costs tens of ms in a worker that imported torch,
    so a trial that ended well is not charged it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        if failed:
            gc.collect()
        torch.cuda.empty_cache()
