"""``prepare(model, optimizer, loader, ...)``: what data-parallel training needs, in one call, a no-op elsewhere.

In a data-parallel trial a model moves to the rank's device and, with more than one rank, is wrapped in
DistributedDataParallel; a DataLoader is re-created with a DistributedSampler (each rank sees its share, the same
batch_size per rank, so the global batch is batch_size × world size, as in Accelerate) and yields batches on the
rank's device, calling ``set_epoch`` at each new pass so shuffling differs per epoch. Optimizers pass through:
moving a model keeps its Parameter objects, so an optimizer made before still holds the right ones.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from ..errors import ArgumentError, ClusterError
from ._context import rank as _rank
from ._context import run, world_size


def prepare(*objects: Any) -> Any:
    """Return the objects ready for this rank (one object for one argument, a tuple for several)."""
    if run.device is None:  # alone, in an HPO trial, in an ablation trial: unchanged
        return objects[0] if len(objects) == 1 else objects
    prepared = tuple(_prepare_one(obj, index) for index, obj in enumerate(objects))
    return prepared[0] if len(prepared) == 1 else prepared


def unwrap(model):
    """The model inside a DistributedDataParallel wrapper (the model itself when it is not wrapped)."""
    import torch

    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def _prepare_one(obj: Any, index: int) -> Any:
    import torch

    if isinstance(obj, torch.nn.Module):
        model = obj.to(run.device)
        if world_size() == 1:  # measured: DDP around a single rank only costs time
            return model
        ids = [run.device.index] if run.device.type == "cuda" else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if isinstance(obj, torch.utils.data.DataLoader):
        return ShardedLoader(obj, run.device)
    if isinstance(obj, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)):
        return obj
    raise ArgumentError(
        f"prepare(): argument {index + 1} is a {type(obj).__name__}; it takes models (torch.nn.Module), "
        "optimizers, LR schedulers and DataLoaders"
    )


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

    def __iter__(self):
        self.sampler.set_epoch(self.epoch)
        self.epoch += 1
        if self.device.type == "cpu":
            yield from self.loader
            return
        for batch in self.loader:
            yield _to_device(batch, self.device)


def _to_device(batch: Any, device) -> Any:
    if hasattr(batch, "to"):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    return batch
