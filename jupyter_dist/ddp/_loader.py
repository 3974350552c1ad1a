"""The DataLoader prepare() returns in a data-parallel trial: each rank iterates its share of the dataset.

The loader is re-created with a DistributedSampler (each rank sees its share, the same batch_size per rank, so the
global batch is batch_size × world size, as in Accelerate) and yields batches on the rank's device, calling
``set_epoch`` at each new pass so shuffling differs per epoch. While the loop body runs on the final batch, the
loader is marked as at its end, so that ``gather_for_metrics()`` knows which of the batch's samples the sampler
repeated to give every rank as many.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from ..errors import ArgumentError, ClusterError
from ._context import rank as _rank
from ._context import run, world_size
from ._nested import map_tensors


def _shuffles(loader) -> bool:
    from torch.utils.data import RandomSampler, SequentialSampler

    if isinstance(loader.sampler, RandomSampler):
        return True
    if isinstance(loader.sampler, SequentialSampler):
        return False
    raise ArgumentError(
        f"prepare(): the DataLoader has a {type(loader.sampler).__name__}; only DataLoaders made with "
        "shuffle=True/False can be sharded across ranks. Shard it yourself with jupyter_dist.rank() and "
        "jupyter_dist.world_size() instead"
    )


class ShardedLoader:
    """A DataLoader re-made with a DistributedSampler; iterating it starts a new epoch and moves batches to
    the rank's device."""

    def __init__(self, loader, device) -> None:
        from torch.utils.data import DataLoader, IterableDataset
        from torch.utils.data.distributed import DistributedSampler

        if isinstance(loader.dataset, IterableDataset):
            raise ArgumentError(
                "prepare(): an IterableDataset cannot be sharded by a sampler; read your share of it with "
                "jupyter_dist.rank() and jupyter_dist.world_size()"
            )
        if loader.batch_size is None:
            raise ArgumentError(
                "prepare(): the DataLoader has a custom batch_sampler; give it a batch_size instead"
            )
        if loader.num_workers and multiprocessing.current_process().daemon:
            raise ClusterError(
                f"DataLoader(num_workers={loader.num_workers}) needs worker processes that may start processes, "
                "but this Dask worker is daemonic: start the workers with the dask config "
                "distributed.worker.daemon: False (the embedded cluster does), or use num_workers=0"
            )
        self.sampler = DistributedSampler(
            loader.dataset,
            num_replicas=world_size(),
            rank=_rank(),
            shuffle=_shuffles(loader),
            drop_last=loader.drop_last,
        )
        options = dict(
            batch_size=loader.batch_size,
            sampler=self.sampler,
            num_workers=loader.num_workers,
            collate_fn=loader.collate_fn,
            pin_memory=loader.pin_memory,
            drop_last=loader.drop_last,
            timeout=loader.timeout,
            worker_init_fn=loader.worker_init_fn,
            multiprocessing_context=loader.multiprocessing_context,
            persistent_workers=loader.persistent_workers,
        )
        if loader.num_workers:
            options["prefetch_factor"] = loader.prefetch_factor
        self.loader = DataLoader(loader.dataset, **options)
        self.device = device
        self.epoch = 0
        self.dataset = loader.dataset
        self.batch_size = loader.batch_size

    def __len__(self) -> int:
        return len(self.loader)

    @property
    def padded_ranks(self) -> range:
        """The ranks whose final batch ends with a repeated sample: DistributedSampler (without drop_last) pads
        its index list to a multiple of the world size by repeating its start, and deals it out round-robin, so
        the repeats are the last sample of ranks N % world .. world - 1 (none when the world divides N)."""
        samples, world = len(self.dataset), self.sampler.num_replicas
        if self.sampler.drop_last or samples % world == 0:
            return range(0)
        return range(samples % world, world)

    def __iter__(self):
        self.sampler.set_epoch(self.epoch)
        self.epoch += 1
        last = len(self.loader) - 1
        try:
            for index, batch in enumerate(self.loader):
                if index == last:
                    run.final_batch_of = self
                yield batch if self.device.type == "cpu" else _to_device(batch, self.device)
        finally:  # the loop ended, or broke off (the generator is closed)
            if run.final_batch_of is self:
                run.final_batch_of = None


def _to_device(batch: Any, device) -> Any:
    def move(value):
        return value.to(device, non_blocking=True)

    # Besides tensors, anything else with .to() (a tokenizer's BatchEncoding) moves too.
    return map_tensors(batch, move, lambda value: move(value) if hasattr(value, "to") else value)
