"""``prepare(..., strategy="fsdp")``: the model sharded with FSDP2 (``torch.distributed.fsdp.fully_shard``).

Each rank keeps 1/world of every parameter (and so of its gradient and optimizer state); a module's parameters
are all-gathered just before its forward and backward and freed after, and gradients are reduce-scattered.
``fully_shard`` replaces the parameters with DTensor parameters, so an optimizer made before prepare() would
update tensors the model no longer uses: prepare() points it at the new ones (by parameter name).
"""

from __future__ import annotations

from ..errors import ArgumentError

STRATEGIES = ("ddp", "fsdp")


def check_strategy(value) -> None:
    if value is not None and value not in STRATEGIES:
        raise ArgumentError(
            f"strategy={value!r}: use 'ddp' (every rank holds the whole model) or 'fsdp' (each rank holds a "
            "shard of every parameter)"
        )


def shard(model, device, world: int):
    """Shard each submodule that holds parameters of its own, then the root (children before their parents:
    ``fully_shard`` on a module takes every parameter not already in a sharded submodule)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (world,))  # the whole world: it reuses the default process group
    for module in reversed(list(model.modules())):  # reversed pre-order: descendants before ancestors
        if module is not model and any(True for _ in module.parameters(recurse=False)):
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def repoint_optimizer(optimizer, replaced: dict) -> None:
    """Swap, in ``optimizer``'s param groups, each parameter that sharding replaced for its replacement
    (``replaced``: id of the old parameter -> the new one)."""
    groups = optimizer.param_groups
    if not any(id(p) in replaced and replaced[id(p)] is not p for group in groups for p in group["params"]):
        return
    if any(optimizer.state.values()):
        raise ArgumentError(
            "prepare(..., strategy='fsdp'): the optimizer already has state (it has stepped); sharding replaces "
            "the model's parameters, and that state belongs to the old ones. Prepare the model and the "
            "optimizer before training"
        )
    for group in groups:
        group["params"] = [replaced.get(id(param), param) for param in group["params"]]
