"""``prepare(model, optimizer, loader, ...)``: what data-parallel training needs, in one call.

In a data-parallel trial a model moves to the rank's device and, with more than one rank, is wrapped in
DistributedDataParallel (a single rank's model is left as it is, its inputs moved to its GPU as DDP would), or
sharded with FSDP2 (``strategy="fsdp"``, at every world size, _fsdp.py); a DataLoader is sharded across the ranks
(_loader.py). Optimizers pass through: moving a model keeps its Parameter objects, so an optimizer made
before still holds the right ones (FSDP replaces them, and prepare() re-points the optimizer).

``mixed_precision`` and ``accumulate`` apply wherever the function runs, alone in the notebook too, as
Accelerate's Accelerator does in one process: the model's forward runs under autocast (_precision.py), and the
optimizer comes back wrapped to accumulate gradients and to step through the fp16 scaler (_accumulate.py).
Without them, outside a data-parallel trial (alone, in an HPO or ablation trial) the objects come back unchanged.
"""

from __future__ import annotations

from typing import Any

from .._imported import imported
from ..errors import ArgumentError
from ._context import run, world_size
from ._fsdp import check_strategy, repoint_optimizer, shard
from ._loader import ShardedLoader
from ._nested import map_tensors
from ._precision import autocast_forward, make_scaler, resolve_mixed_precision


def prepare(
    *objects: Any,
    mixed_precision: str | None = None,
    accumulate: int = 1,
    strategy: str | None = None,
) -> Any:
    """Return the objects ready for this rank (one object for one argument, a tuple for several, in order).

    Parameters
    ----------
    objects
        Models (``torch.nn.Module``), optimizers, LR schedulers and DataLoaders.
    mixed_precision
        "bf16" or "fp16": the model's forward runs under ``torch.autocast`` with that dtype and returns float32.
        With "fp16" an optimizer given in the same call steps through a gradient scaler: call
        ``jupyter_dist.backward(loss)`` instead of ``loss.backward()``. None: the ``data_parallel`` run's
        ``mixed_precision`` (full precision elsewhere); "no": full precision.
    accumulate
        Micro-batches per optimizer step: the optimizer (exactly one, in the same call) steps and zeroes the
        gradients on every k-th ``step()`` / ``zero_grad()`` only, dividing the summed gradients by k; the model
        prepared with it skips the gradient all-reduce on the other backward passes.
    strategy
        "ddp" (each rank holds the model) or "fsdp" (each holds a shard of every parameter); None: the
        ``data_parallel`` run's ``strategy``, else "ddp". Only a data-parallel trial of 2 ranks or more wraps.
    """
    from ._accumulate import Accumulation, PreparedOptimizer, check_accumulate

    precision = resolve_mixed_precision(mixed_precision)
    check_accumulate(accumulate)
    check_strategy(strategy)
    strategy = strategy or run.strategy or "ddp"
    if run.device is None and precision is None and accumulate == 1:  # alone, in an HPO or ablation trial
        if any(_kind(obj) in ("model", "optimizer") for obj in objects):
            run.scaler = None  # a scaler from an earlier fp16 call must not scale this model's losses
        return objects[0] if len(objects) == 1 else objects

    kinds = [_kind(obj, index) for index, obj in enumerate(objects)]
    optimizers = kinds.count("optimizer")
    if accumulate > 1 and optimizers != 1:
        raise ArgumentError(
            f"prepare(..., accumulate={accumulate}) got {optimizers} optimizers: give the one optimizer in the "
            "same call as the model (prepare(model, optimizer, loader, accumulate=k)); its step() calls count "
            "the micro-batches"
        )
    if precision == "fp16" and optimizers > 1:
        raise ArgumentError(
            "prepare(..., mixed_precision='fp16') got several optimizers; the gradient scaler is updated once "
            "per step() of one optimizer: prepare each optimizer with its model in a call of its own"
        )
    device = run.device if run.device is not None else _device_of(objects)
    scaler = make_scaler(device.type) if precision == "fp16" and optimizers else None
    accumulation = Accumulation(accumulate, scaler)

    prepared = list(objects)
    replaced: dict[int, Any] = {}  # FSDP replaces the parameters: id of the old one -> the new one
    for index, obj in enumerate(objects):
        if kinds[index] == "model":
            before = dict(obj.named_parameters())
            prepared[index] = _prepare_model(obj, precision, strategy, device, accumulation)
            if strategy == "fsdp":  # the same names, new tensors
                after = dict(prepared[index].named_parameters())
                replaced.update((id(param), after[name]) for name, param in before.items())
    for index, obj in enumerate(objects):
        if kinds[index] == "optimizer":
            repoint_optimizer(obj, replaced)
            if accumulate > 1 or scaler is not None:
                prepared[index] = PreparedOptimizer(obj, accumulation)
        elif kinds[index] == "loader" and run.device is not None:
            prepared[index] = ShardedLoader(obj, run.device)
    if "model" in kinds or optimizers:
        run.scaler = scaler
    return prepared[0] if len(prepared) == 1 else tuple(prepared)


def unwrap(model):
    """The model inside a DistributedDataParallel wrapper (the model itself when it is not wrapped)."""
    import torch

    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def _kind(obj: Any, index: int | None = None) -> str | None:
    """What ``obj`` is to prepare(); with ``index``, an object it cannot take is an error naming the argument."""
    torch = imported("torch")  # an object of torch's means torch is imported already
    if torch is not None:
        if isinstance(obj, torch.nn.Module):
            return "model"
        if isinstance(obj, torch.optim.Optimizer):
            return "optimizer"
        if isinstance(obj, torch.optim.lr_scheduler.LRScheduler):
            return "scheduler"
        if isinstance(obj, torch.utils.data.DataLoader):
            return "loader"
    if index is None:
        return None
    raise ArgumentError(
        f"prepare(): argument {index + 1} is a {type(obj).__name__}; it takes models (torch.nn.Module), "
        "optimizers, LR schedulers and DataLoaders"
    )


def _device_of(objects: tuple) -> Any:
    """Alone, where the first model's (or optimizer's) parameters are: autocast and the scaler run there."""
    import torch

    for obj in objects:
        if isinstance(obj, torch.nn.Module):
            params = obj.parameters()
        elif isinstance(obj, torch.optim.Optimizer):
            params = (p for group in obj.param_groups for p in group["params"])
        else:
            continue
        first = next(iter(params), None)
        if first is not None:
            return first.device
    return torch.device("cpu")


def _prepare_model(model, precision: str | None, strategy: str, device, accumulation):
    import torch

    if run.device is not None:
        model = model.to(run.device)
    if precision is not None:
        autocast_forward(model, device.type, precision)
    if run.device is None:
        return model
    if world_size() == 1 and strategy != "fsdp":  # measured: DDP around a single rank only costs time
        if run.device.type == "cuda":
            model.forward = InputsToDevice(model.forward, run.device)  # what DDP does with the inputs
        return model
    if strategy == "fsdp":  # at any world size: the sharded checkpoints, and the code path, of every other
        wrapped = shard(model, run.device, world_size())
    else:
        ids = [run.device.index] if run.device.type == "cuda" else None
        wrapped = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    accumulation.watch(wrapped)
    return wrapped


class InputsToDevice:
    """A model's forward that first moves the tensors among its arguments to the rank's GPU, as
    DistributedDataParallel (``device_ids``) and FSDP do: the same training code works at every world size,
    also the one where prepare() leaves the model unwrapped."""

    def __init__(self, forward, device) -> None:
        self.forward = forward
        self.device = device

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        def move(tensor):
            return tensor.to(self.device, non_blocking=True)

        return self.forward(*map_tensors(args, move), **map_tensors(kwargs, move))
