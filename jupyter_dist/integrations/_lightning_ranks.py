"""A Lightning cluster environment for a Trainer inside ``jupyter_dist.data_parallel()``: each rank is a Dask
worker process that jupyter_dist started and joined into a process group already, so Lightning must neither
launch processes nor guess ranks from environment variables (it would take every rank for rank 0)."""

from __future__ import annotations

from ..errors import ArgumentError
from ..trials import current_trial

__all__ = ["DataParallelRanks"]


def _rank_info():
    ctx = current_trial()
    return ctx.rank_info if ctx is not None else None


class DataParallelRanks:
    """The ranks of the running ``data_parallel()`` job, as Lightning's ``ClusterEnvironment`` describes them:
    one process per node (a node per worker), its node rank the job's rank."""

    @property
    def creates_processes_externally(self) -> bool:
        return True  # the ranks are Dask tasks already running: Lightning launches nothing

    @property
    def main_address(self) -> str:
        info = _rank_info()
        return info.host if info is not None else "127.0.0.1"

    @property
    def main_port(self) -> int:
        info = _rank_info()
        return info.port if info is not None else 0

    @staticmethod
    def detect() -> bool:
        return _rank_info() is not None

    def world_size(self) -> int:
        info = _rank_info()
        return info.world if info is not None else 1

    def set_world_size(self, size: int) -> None:
        # Lightning computes it as num_nodes * devices: refuse a Trainer sized otherwise before it trains, which
        # would hang in its first collective.
        if size != self.world_size():
            raise ArgumentError(
                f"Trainer(num_nodes, devices) make {size} processes, but this data_parallel() job has "
                f"{self.world_size()} ranks, one process each: use Trainer(devices=1, "
                "num_nodes=jupyter_dist.world_size())"
            )

    def global_rank(self) -> int:
        info = _rank_info()
        return info.rank if info is not None else 0

    def set_global_rank(self, rank: int) -> None:
        pass  # the job's rank is fixed; set_world_size already refused a Trainer that would number them otherwise

    def local_rank(self) -> int:
        return 0

    def node_rank(self) -> int:
        return self.global_rank()
