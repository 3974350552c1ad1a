"""How the embedded cluster lays its GPU workers out for an experiment's ``gpus_per_trial``.

Each GPU worker is one process seeing only its devices (CUDA_VISIBLE_DEVICES, as dask-cuda does) and declaring
them as the Dask resource ``GPU`` (and their type, ``GPU-H100``). For a share of a GPU (``gpus_per_trial=0.25``)
a GPU gets as many single-thread worker processes as shares fit (four), each declaring its share: packed trials
then run side by side in processes of their own, so each one's memory cap is its own share
(torch.cuda.set_per_process_memory_fraction is per process), a CUDA error or a leak stays in its process, and
nothing contends for one Python interpreter. For whole GPUs (``gpus_per_trial=2``) GPUs are grouped, one worker
per group. The layout changes only between runs (never under running trials) and costs a few seconds of
worker start-up; the CPU-only workers are left as they are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import ClusterError
from ..protocol import GPU, gpu_type_resource, how_many_fit

__all__ = ["GpuSlot", "gpu_layout", "slot_name", "wait_for_layout"]

# How long the embedded cluster's new GPU workers may take to start (each imports what the kernel preimports).
LAYOUT_TIMEOUT = 120.0


@dataclass(frozen=True)
class GpuSlot:
    """One GPU worker process: the CUDA_VISIBLE_DEVICES it sees and how much GPU it declares."""

    devices: tuple[str, ...]
    amount: float
    gpu_type: str | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(self.devices)}

    @property
    def resources(self) -> dict[str, float]:
        declared = {GPU: self.amount}
        if self.gpu_type:
            declared[gpu_type_resource(self.gpu_type)] = self.amount
        return declared


def gpu_layout(devices: list[str], types: list[str | None], share: float | None) -> list[GpuSlot]:
    """The GPU workers for trials of ``share`` GPUs each (None: one per GPU) on ``devices`` of ``types``."""
    if share is None or share == 1:
        return [GpuSlot((d,), 1, t) for d, t in zip(devices, types, strict=True)]
    if share < 1:
        slots = max(1, how_many_fit(1.0, share))
        return [
            GpuSlot((d,), 1 / slots, t) for d, t in zip(devices, types, strict=True) for _ in range(slots)
        ]
    group = int(share)
    layout = []
    for start in range(0, len(devices) - group + 1, group):
        kinds = set(types[start : start + group])
        # GPUs of two types in one group: the group's type is neither (gpu_type= would not find it).
        layout.append(
            GpuSlot(tuple(devices[start : start + group]), group, kinds.pop() if len(kinds) == 1 else None)
        )
    covered = len(layout) * group
    layout += [GpuSlot((d,), 1, t) for d, t in zip(devices[covered:], types[covered:], strict=True)]
    return layout


def slot_name(index: int, slot: GpuSlot) -> str:
    """A GPU worker's name, which says what it holds (``gpu0``, ``gpu0-share2of4``, ``gpu0+1``). Another layout
    names its workers otherwise: a worker whose name stays is kept as it runs, with what it declared."""
    name = "gpu" + "+".join(slot.devices)
    return name if slot.amount >= 1 else f"{name}-share{index}of{round(1 / slot.amount)}"


def wait_for_layout(client, names: set[str], timeout: float = LAYOUT_TIMEOUT) -> None:
    """Until the scheduler's workers are exactly those named (the old layout gone, the new one arrived)."""
    deadline = time.monotonic() + timeout
    while True:
        present = {info.get("name") for info in client.scheduler_info(n_workers=-1)["workers"].values()}
        if present == names:
            return
        if time.monotonic() > deadline:
            raise ClusterError(
                f"the embedded cluster's GPU workers did not come up within {timeout:g} s: it has "
                f"{sorted(map(str, present))}, not {sorted(names)}"
            )
        time.sleep(0.1)
