"""Cores per trial (``cpus_per_trial=``): what a "core" is on a Dask cluster, and a trial's torch threads.

A core is what the cluster says it has:

- workers that declare a Dask ``CPU`` resource (``dask worker --resources CPU=8``): each trial asks for
  ``CPU=n`` of it, and Dask runs on a worker only as many trials as its declared CPUs cover;
- otherwise a worker's threads (``dask worker --nthreads``; the embedded LocalCluster gives each worker process
  one thread, one process per core of the machine): nothing on the worker stops a trial from using more, so
  the run keeps ``threads // n`` trials in flight (``parallel=`` given by the user wins).

Inside the trial, torch's intra-op threads are ``n`` (a Dask nanny sets OMP_NUM_THREADS=1, so without it a trial
uses one core whatever it was given), and the worker's own setting comes back when the trial ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

CPU = "CPU"


def declares_cpus(workers: dict[str, dict]) -> bool:
    """Whether any of the scheduler's ``workers`` declares a ``CPU`` resource."""
    return any(CPU in info.get("resources", {}) for info in workers.values())


def trials_by_threads(workers: dict[str, dict], cpus: int | None) -> int:
    """How many trials of ``cpus`` cores each the workers' threads hold at once (at least 1)."""
    threads = sum(info.get("nthreads", 1) for info in workers.values())
    return max(1, threads // (cpus or 1))


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads are ``n`` inside, the worker's own after (nothing happens for None)."""
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
