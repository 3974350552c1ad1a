"""What ``%distribute_cluster`` shows: the kind of cluster cells run on, its name, and what it has now."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClusterInfo:
    kind: str  # "embedded LocalCluster", "Dask Gateway cluster", "Dask scheduler", a cluster class's name...
    name: str  # the gateway cluster's name, or the scheduler's address
    workers: int
    threads: int
    memory: int  # bytes, summed over the workers' memory limits
    gpus: float  # summed over the workers' declared GPU resources (dask worker --resources GPU=n)
    dashboard: str | None
    adaptive: str | None = None  # "adapting between 1 and 3 workers" when the cluster scales itself
    client: Any = field(default=None, repr=False, compare=False)

    def _facts(self) -> list[str]:
        facts = [
            f"{self.workers} worker{'s' * (self.workers != 1)}",
            f"{self.threads} thread{'s' * (self.threads != 1)}",
            f"{self.memory / 2**30:.1f} GiB",
            f"{self.gpus:g} GPU{'s' * (self.gpus != 1)}",
        ]
        return facts + ([self.adaptive] if self.adaptive else [])

    def __repr__(self) -> str:
        text = f"{self.kind} {self.name}: " + ", ".join(self._facts())
        return text + (f"\ndashboard: {self.dashboard}" if self.dashboard else "")

    def _repr_html_(self) -> str:
        link = (
            f" · <a href='{html.escape(self.dashboard)}' target='_blank'>Dask dashboard</a>"
            if self.dashboard
            else ""
        )
        return (
            f"<div class='jupyter-dist-cluster'><b>{html.escape(self.kind)}</b> <code>{html.escape(self.name)}</code>"
            f": {html.escape(', '.join(self._facts()))}{link}</div>"
        )


def describe(kind: str, name: str, client, dashboard: str | None, adaptive: str | None = None) -> ClusterInfo:
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return ClusterInfo(
        kind=kind,
        name=name,
        workers=len(workers),
        threads=sum(w.get("nthreads", 0) for w in workers.values()),
        memory=sum(w.get("memory_limit") or 0 for w in workers.values()),
        gpus=sum((w.get("resources") or {}).get("GPU", 0) for w in workers.values()),
        dashboard=dashboard,
        adaptive=adaptive,
        client=client,
    )
