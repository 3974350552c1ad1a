"""GPUs as Dask resources: the names workers declare, and shares of a GPU that add up.

A worker declares its GPUs as the Dask resource ``GPU`` (``dask worker --resources GPU=2``) and their type as one
more resource, ``GPU-<type>`` with the same count (``--resources GPU=2,GPU-H100=2``; the embedded cluster declares
it from NVML's device name): Dask then places a trial that asks for ``{"GPU": 0.5, "GPU-H100": 0.5}`` only where
both fit, and its own accounting packs fractions. Kernel (placement) and worker (which device a trial holds) read
the same names from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "GPU",
    "SHARE_EPSILON",
    "declared_types",
    "dask_request",
    "gpu_type_resource",
    "how_many_fit",
    "type_from_device_name",
]

GPU = "GPU"
_TYPE_PREFIX = "GPU-"
# Shares are floats: ten trials of 0.1 sum to 1.0000000000000002 on the worker's books, and Dask (which checks
# "available >= asked") would run nine. A trial asks Dask for its share less this much, and the worker's own
# device books allow the same slack: the sum of shares packed never exceeds a GPU by more than rounding.
SHARE_EPSILON = 1e-9


def gpu_type_resource(gpu_type: str) -> str:
    """The Dask resource a worker with GPUs of ``gpu_type`` declares (``GPU-H100``)."""
    return f"{_TYPE_PREFIX}{gpu_type}"


def declared_types(resources: Mapping[str, float]) -> dict[str, float]:
    """The GPU types a worker's declared resources name, with how many GPUs of each (``{"H100": 2}``)."""
    return {
        name[len(_TYPE_PREFIX) :]: amount
        for name, amount in resources.items()
        if name.startswith(_TYPE_PREFIX) and len(name) > len(_TYPE_PREFIX)
    }


def dask_request(resources: Mapping[str, float]) -> dict[str, float]:
    """What a task asks Dask for, to be given ``resources``: fractional amounts a hair less (SHARE_EPSILON)."""
    return {
        name: amount if float(amount).is_integer() else amount - SHARE_EPSILON
        for name, amount in resources.items()
    }


def how_many_fit(declared: float, asked: float) -> int:
    """How many tasks each asking ``asked`` of a resource fit in ``declared`` of it (0.1 of 1.0: ten)."""
    return int(declared / asked + SHARE_EPSILON) if asked > 0 else 0


# Words of NVML's device names that say nothing of the model: "NVIDIA H100 80GB HBM3" is an H100.
_VENDOR_WORDS = {"NVIDIA", "TESLA", "GEFORCE", "QUADRO"}


def type_from_device_name(name: str) -> str:
    """A GPU type as a short resource name, from NVML's device name: "NVIDIA H100 80GB HBM3" -> "H100",
    "NVIDIA A100-SXM4-80GB" -> "A100", "NVIDIA GeForce RTX 4090" -> "RTX4090", "Tesla T4" -> "T4"."""
    words = [w for w in re.split(r"[\s_]+", name.strip()) if w and w.upper() not in _VENDOR_WORDS]
    if not words:
        return re.sub(r"\W+", "", name) or "unknown"
    first = words[0].split("-")[0]
    if not re.search(r"\d", first) and len(words) > 1:  # "RTX 4090", "RTX A6000": the number is the model
        first += words[1].split("-")[0]
    return re.sub(r"[^\w.]+", "", first)
