"""The DataLoader prepare() returns in a data-parallel trial: each rank iterates its share of the dataset.

The loader is re-created with a DistributedSampler (each rank sees its share, the same batch_size per rank, so the
global batch is batch_size × world size, as in Accelerate) and yields batches on the rank's device, calling
``set_epoch`` at each new pass so shuffling differs per epoch. While the loop body runs on the final batch, the
loader is marked as at its end, so that ``gather_for_metrics()`` knows which of the batch's samples the sampler
repeated to give every rank as many.

The loader knows where it is in its epoch (``state_dict()``): ``checkpoint()`` saves that, and after ``restore()``
the next pass goes on with the rest of the epoch at the world size there is now, so that an elastic job that lost
or gained ranks sees each sample of the epoch once (_sampler.py).
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
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


@dataclass
class _Pass:
    """One pass of a ShardedLoader over (the rest of) an epoch."""

    epoch: int
    start: int  # samples of the epoch (of every rank) trained on before the pass
    batches: int  # the pass's batches, on each rank
    yielded: int = 0
    ended: bool = False


class ShardedLoader:
    """A DataLoader re-made with an ElasticSampler (a DistributedSampler); iterating it starts a new epoch (or,
    after ``load_state_dict()``, goes on with the rest of one) and moves batches to the rank's device.

    ``num_replicas`` and ``rank`` default to the trial's world size and rank (given, to build one rank's loader
    of a larger world, in tests).
    """

    def __init__(self, loader, device, *, num_replicas: int | None = None, rank: int | None = None) -> None:
        from torch.utils.data import DataLoader, IterableDataset

        from ._sampler import ElasticSampler

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
        self.sampler = ElasticSampler(
            loader.dataset,
            num_replicas=world_size() if num_replicas is None else num_replicas,
            rank=_rank() if rank is None else rank,
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
        self.dataset = loader.dataset
        self.batch_size = loader.batch_size
        # The pass under way, or the latest; between passes the sampler stands where the next one starts.
        self._pass: _Pass | None = None
        registry = run.loaders
        if registry is not None:  # in a trial: checkpoint() saves its position, restore() brings it back
            registry.add(self)

    def __len__(self) -> int:
        """The batches of the pass under way, else of the next one (the rest of a restored epoch, once restored)."""
        current = self._pass
        if current is not None and not current.ended:
            return current.batches
        return len(self.loader)

    @property
    def padded_ranks(self) -> range:
        """The ranks whose final batch of the pass ends with a sample repeated to give every rank as many
        (see ElasticSampler.padded_ranks: it depends on what remained of the epoch when the pass began)."""
        return self.sampler.padded_ranks

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is: the ``epoch`` and how many of its samples every rank together has trained on
        (``consumed``). The batch being trained on counts: a checkpoint() in the loop body must not give it
        again. Once a pass is over (run out, or broken off) it is the next epoch's start, where the next pass
        would begin without a restart too."""
        current = self._pass
        if current is None or current.ended:
            return {"epoch": self.sampler.epoch, "consumed": self.sampler.consumed}
        # Dealt round-robin: every rank's batch b holds the next batch_size x world samples of the order. The
        # final batch may count past the epoch's end, by the samples repeated to even out the ranks.
        per_batch = self.batch_size * self.sampler.num_replicas
        consumed = min(current.start + current.yielded * per_batch, len(self.dataset))
        return {"epoch": current.epoch, "consumed": consumed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Make the next pass the rest of ``state``'s epoch (from ``state_dict()``, at any world size): none of
        it when it was all consumed, as the loop body that saved the state was on the epoch's final batch and,
        restarted, goes on with the end of that epoch's loop. The passes after it go on with the next epochs."""
        self._end_pass()
        self.sampler.set_position(int(state["epoch"]), int(state["consumed"]))

    def __iter__(self):
        self._end_pass()  # an earlier pass left unfinished (and not closed) counts as over
        current = self._pass = _Pass(self.sampler.epoch, self.sampler.consumed, len(self.loader))
        return self._batches(current)

    def _batches(self, current: _Pass):
        last = current.batches - 1
        try:
            for index, batch in enumerate(self.loader):
                if index == last:
                    run.final_batch_of = self
                # Counted before the loop body runs: a checkpoint() taken while it trains on this batch must not
                # give it again after a restart.
                current.yielded = index + 1
                yield batch if self.device.type == "cpu" else _to_device(batch, self.device)
        finally:  # the loop ended, or broke off (the generator is closed)
            if run.final_batch_of is self:
                run.final_batch_of = None
            if current is self._pass:
                self._end_pass()

    def _end_pass(self) -> None:
        """The pass under way is over: the next starts the next epoch."""
        current = self._pass
        if current is not None and not current.ended:
            current.ended = True
            self.sampler.set_position(current.epoch + 1, 0)


def _to_device(batch: Any, device) -> Any:
    def move(value):
        return value.to(device, non_blocking=True)

    # Besides tensors, anything else with .to() (a tokenizer's BatchEncoding) moves too.
    return map_tensors(batch, move, lambda value: move(value) if hasattr(value, "to") else value)
