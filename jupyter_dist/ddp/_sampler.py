"""The sampler of a prepared DataLoader: torch's DistributedSampler, able to start an epoch part-way through.

An elastic data-parallel job starts again from its newest checkpoint with another number of ranks. For no sample
to be seen twice or skipped within the epoch it was in, the ranks must together go on with the epoch's order where
they left it, whatever their number. DistributedSampler deals the epoch's order round-robin (rank r takes
positions r, r + world, ...), so after b batches of batch_size on every rank, exactly the order's first
b × batch_size × world samples have been trained on: a single global offset (``consumed``) says where the epoch
stands, and the rest of the order is dealt out again, round-robin, among the ranks there are now.
"""

from __future__ import annotations

import math

from torch.utils.data.distributed import DistributedSampler

from ..errors import ArgumentError


class ElasticSampler(DistributedSampler):
    """A DistributedSampler whose epoch starts at ``consumed`` samples into the epoch's global order.

    The order is DistributedSampler's (``randperm`` seeded with ``seed + epoch`` when shuffling, else the
    dataset's order); its remaining part, ``order[consumed:]``, is padded (or, with ``drop_last``, cut) to a
    multiple of the world size and dealt round-robin as DistributedSampler deals a whole epoch. With
    ``consumed == 0`` it yields exactly what DistributedSampler yields.
    """

    def __init__(
        self,
        dataset,
        num_replicas: int,
        rank: int,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        super().__init__(
            dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
        )
        self.consumed = 0
        self._fit_share()

    def set_position(self, epoch: int, consumed: int) -> None:
        """Make the next pass the rest of ``epoch`` after its first ``consumed`` samples (of every rank)."""
        size = self._dataset_size()
        if not 0 <= consumed <= size:
            raise ArgumentError(
                f"consumed={consumed}: a position in an epoch of this dataset is 0 to its {size} samples; "
                "load a state saved by a loader of the same dataset"
            )
        self.set_epoch(epoch)
        self.consumed = consumed
        self._fit_share()

    @property
    def remaining(self) -> int:
        """The samples of the epoch's order not trained on yet (by any rank)."""
        return self._dataset_size() - self.consumed

    @property
    def padded_ranks(self) -> range:
        """The ranks whose share ends with a repeated sample: without drop_last the remaining order is padded to a
        multiple of the world size by repeating its start, and dealt round-robin, so the repeats land last in the
        shares of ranks remaining % world .. world - 1 (none when the world divides what remains)."""
        remaining, world = self.remaining, self.num_replicas
        if self.drop_last or remaining % world == 0:
            return range(0)
        return range(remaining % world, world)

    def __iter__(self):
        order = self._order()[self.consumed :]
        if self.drop_last:
            order = order[: self.total_size]
        elif order:  # nothing left: nothing to pad with either
            padding = self.total_size - len(order)
            order += (order * math.ceil(padding / len(order)))[:padding]
        return iter(order[self.rank : self.total_size : self.num_replicas])

    def _order(self) -> list[int]:
        """The epoch's global order, as DistributedSampler makes it."""
        import torch

        if not self.shuffle:
            return list(range(self._dataset_size()))
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return torch.randperm(self._dataset_size(), generator=generator).tolist()

    def _dataset_size(self) -> int:
        # torch's Dataset declares no __len__; a dataset a sampler splits has one (DistributedSampler's own
        # sizing calls it too).
        return len(self.dataset)  # type: ignore[arg-type]

    def _fit_share(self) -> None:
        # DistributedSampler's own sizing, over what remains of the epoch instead of the whole dataset; its
        # len() and the DataLoader's (remaining batches) follow from num_samples.
        remaining, world = self.remaining, self.num_replicas
        self.num_samples = remaining // world if self.drop_last else math.ceil(remaining / world)
        self.total_size = self.num_samples * world
