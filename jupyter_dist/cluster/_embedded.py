"""How the embedded LocalCluster is set up: the Dask settings that leave its cores to the trials, the GPUs its
workers declare, and the libraries they import before the first trial."""

from __future__ import annotations

import os
from typing import Any

import dask

__all__ = [
    "EMBEDDED_CLUSTER_CONFIG",
    "embedded_cluster_config",
    "local_gpu_types",
    "local_gpus",
    "modules_to_preimport",
]


# Background work of the embedded cluster's scheduler, nannies and workers competes with trials for the same
# cores (bench_trial_speed: the workers' sampling profiler alone was a third of their event loop's CPU; the
# kernel process's IO loop took ~1.3 s per 10 s run). Dask's defaults serve the dashboard's profile page and its
# 500 ms system plots, and move queued tasks between workers every 100 ms, which trials placed by the launcher
# never need; a notebook's cluster is better off giving those cycles to training. A value the user set wins.
EMBEDDED_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "500ms",
    "distributed.scheduler.work-stealing": False,
}


def local_gpus() -> list[str]:
    """This machine's GPUs as the embedded cluster's workers should see them: one CUDA_VISIBLE_DEVICES value each
    (an index, or what the kernel's own CUDA_VISIBLE_DEVICES lists), none without an NVIDIA driver or torch.

    Asking torch for the count leaves torch's CUDA state in the kernel uninitialised (the workers are spawned
    either way); the driver check first spares a CPU-only machine importing torch for it."""
    import importlib.util

    if not os.path.exists("/dev/nvidiactl") or importlib.util.find_spec("torch") is None:
        return []
    import torch

    count = torch.cuda.device_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [str(i) for i in range(count)]
    return [device.strip() for device in visible.split(",") if device.strip()][:count]


def local_gpu_types(devices: list[str]) -> list[str | None]:
    """The type of each of ``devices`` (CUDA_VISIBLE_DEVICES values) as the workers declare it (``GPU-H100``),
    from NVML's device name as ``nvidia-smi`` reports it (the driver ships it; torch would initialise CUDA in the
    kernel to say it); None for each when it cannot be asked."""
    if not devices:
        return []
    import shutil
    import subprocess

    from ..protocol import type_from_device_name

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [None] * len(devices)
    try:
        names = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader", "-i", ",".join(devices)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return [None] * len(devices)
    if len(names) != len(devices):
        return [None] * len(devices)
    return [type_from_device_name(name) for name in names]


def embedded_cluster_config() -> dict[str, Any]:
    """EMBEDDED_CLUSTER_CONFIG, less any key whose value differs from Dask's shipped default (the user's)."""
    shipped = dask.config.merge(*dask.config.defaults)
    missing = object()
    return {
        key: value
        for key, value in EMBEDDED_CLUSTER_CONFIG.items()
        if dask.config.get(key, missing) == dask.config.get(key, missing, config=shipped)
    }


# Libraries worth importing in every worker before the first trial when the kernel has them loaded: torch alone
# takes 1-2 s to import, which otherwise lands inside the first trial on each worker (and in its duration).
PREIMPORT_CANDIDATES = (
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "torch",
    "torchvision",
    "transformers",
    "lightgbm",
    "xgboost",
)


def modules_to_preimport() -> list[str]:
    """The candidates this kernel has imported with their public subpackages it has imported (``sklearn``
    leaves ``sklearn.datasets`` to be imported on use), plus dask config ``jupyter_dist.preimport`` (a list)."""
    import sys

    loaded = [
        name
        for name in sys.modules
        if name.partition(".")[0] in PREIMPORT_CANDIDATES and name.count(".") <= 1 and "._" not in name
    ]
    return loaded + [m for m in dask.config.get("jupyter_dist.preimport", None) or [] if m not in loaded]
