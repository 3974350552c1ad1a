"""``gpu_type=``: trials only on workers whose GPUs are of the types asked for.

Workers declare their GPUs' type as a Dask resource (``GPU-H100=2``, protocol/_gpus.py), so one type is one more
resource each trial asks for, and Dask's own placement does the rest. Dask has no "this resource or that one":
for several types each trial is given one of them as it is submitted, in turn, in proportion to how many GPUs of
each type the cluster has (``TypeRotation``): a cluster of 4 H100s and 2 A100s gets two H100 trials for each A100
one, and the queue behind each type drains at about the same pace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import PlacementError
from ..protocol import GPU, declared_types, gpu_type_resource

__all__ = ["TypeRotation", "cluster_gpu_types", "matching_types", "of_type", "of_types"]


def cluster_gpu_types(workers: Mapping[str, dict]) -> dict[str, float]:
    """The GPU types the workers (the scheduler's info by address) declare, with how many GPUs of each."""
    found: dict[str, float] = {}
    for info in workers.values():
        for name, count in declared_types(info.get("resources", {})).items():
            found[name] = found.get(name, 0.0) + count
    return found


def matching_types(workers: Mapping[str, dict], wanted: Sequence[str]) -> dict[str, float]:
    """Of ``wanted`` (compared without regard to case), the types the workers declare, with their GPU counts; a
    PlacementError naming the types the cluster has when it has none of them."""
    present = cluster_gpu_types(workers)
    by_folded = {name.casefold(): name for name in present}
    chosen = {
        by_folded[w.casefold()]: present[by_folded[w.casefold()]] for w in wanted if w.casefold() in by_folded
    }
    if not chosen:
        asked = ", ".join(repr(w) for w in wanted)
        has = ", ".join(f"{name} ({count:g})" for name, count in sorted(present.items()))
        raise PlacementError(
            f"gpu_type={asked}: no worker of the cluster's {len(workers)} has GPUs of that type; "
            + (
                f"its GPUs are {has}. Ask for one of those."
                if has
                else "none declares a GPU type. Workers declare theirs as a Dask resource next to their GPUs "
                "(dask worker --resources GPU=2,GPU-H100=2); the embedded cluster declares its own."
            )
        )
    return chosen


def of_types(workers: Mapping[str, dict], types: Sequence[str] | None) -> dict[str, dict]:
    """Those of ``workers`` declaring GPUs of one of ``types`` (all of them when None)."""
    if not types:
        return dict(workers)
    names = [gpu_type_resource(t) for t in types]
    return {a: info for a, info in workers.items() if any(info.get("resources", {}).get(n) for n in names)}


def of_type(resources: Mapping[str, float] | None, gpu_type: str) -> dict[str, float]:
    """What a trial asks for to hold its GPUs (``resources``' ``GPU``; one when it names none) on a worker whose
    GPUs are of ``gpu_type``: the same amount of ``GPU-<type>`` beside them."""
    share = (resources or {}).get(GPU, 1)
    return {**(resources or {}), GPU: share, gpu_type_resource(gpu_type): share}


class TypeRotation:
    """Which of several GPU types (type -> GPU count) the next trial asks for: each in turn, in proportion to its
    count (the type furthest behind its share goes next)."""

    def __init__(self, counts: Mapping[str, float]) -> None:
        self.counts = dict(counts)
        self.given = dict.fromkeys(counts, 0)

    def next(self) -> str:
        gpu_type = min(self.counts, key=lambda t: ((self.given[t] + 1) / self.counts[t], t))
        self.given[gpu_type] += 1
        return gpu_type
