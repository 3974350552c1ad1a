"""``gather()`` and ``gather_for_metrics()``: every rank's tensors, concatenated in rank order, on every rank.

For evaluation: each rank computes predictions for its shard of the validation set, and the metric needs them
all. A prepared DataLoader gives every rank the same number of samples, so when the set does not divide evenly
its DistributedSampler repeats samples from the start; ``gather_for_metrics`` drops those repeats from the final
batch, so that every sample counts exactly once (Accelerate's ``gather_for_metrics``).
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ._context import run, world_size
from ._nested import map_tensors


def gather(data: Any) -> Any:
    """Every rank's ``data`` concatenated on dim 0 in rank order, on every rank.

    ``data`` is a tensor or a tuple, list or dict of them (nested too); ranks may hold different numbers of rows.
    A 0-dim tensor counts as one row. Every rank must call it (it is a collective). Alone, and in an HPO or
    ablation trial, it returns ``data`` itself.
    """
    if world_size() == 1:
        return data
    return map_tensors(data, lambda tensor: _concatenate(_all_gather(tensor), ()), _not_a_tensor)


def gather_for_metrics(data: Any) -> Any:
    """As ``gather()``, but on the final batch of a prepared DataLoader without the samples its sampler added
    to give every rank as many: a loop over the whole validation set then gathers each sample exactly once.

    The rows of ``data`` must be the batch's samples (predictions, labels, ids), in the batch's order.
    """
    if world_size() == 1:
        return data
    loader = run.final_batch_of
    padded = loader.padded_ranks if loader is not None else ()
    return map_tensors(data, lambda tensor: _concatenate(_all_gather(tensor), padded), _not_a_tensor)


def _not_a_tensor(data: Any) -> Any:
    raise ArgumentError(
        f"gather(): got a {type(data).__name__}; it gathers tensors, and tuples, lists and dicts of tensors "
        "(make numbers a tensor first: torch.tensor([x]))"
    )


def _all_gather(tensor) -> list:
    """Every rank's ``tensor``, in rank order. all_gather needs equal shapes: the rows are counted first, and
    each rank sends its rows padded to the most any rank has."""
    import torch
    import torch.distributed as dist

    tensor = tensor.detach()
    if tensor.dim() == 0:
        tensor = tensor.reshape(1)
    sent = tensor.to(torch.uint8) if tensor.dtype == torch.bool else tensor  # gloo cannot gather bool
    rows = torch.tensor([sent.shape[0]], device=sent.device)
    every_rows = [torch.zeros_like(rows) for _ in range(dist.get_world_size())]
    dist.all_gather(every_rows, rows)
    counts = [int(n) for n in every_rows]
    padded = sent.new_zeros((max(counts), *sent.shape[1:]))
    padded[: sent.shape[0]] = sent
    received = [torch.empty_like(padded) for _ in counts]
    dist.all_gather(received, padded)
    return [part[:count].to(tensor.dtype) for part, count in zip(received, counts, strict=True)]


def _concatenate(parts: list, padded_ranks) -> Any:
    import torch

    # A padded rank's repeated sample is the last of its share, so the last row of its final batch.
    kept = [part[:-1] if rank in padded_ranks and len(part) else part for rank, part in enumerate(parts)]
    return torch.cat(kept, dim=0)
