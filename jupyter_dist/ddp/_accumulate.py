"""Gradient accumulation for ``prepare(..., accumulate=k)``, and the optimizer prepare() returns for it and fp16.

The user's loop stays ``loss.backward(); optimizer.step(); optimizer.zero_grad()``: the prepared optimizer counts
its step() calls. On the k-1 micro-steps it neither steps nor zeroes, so gradients add up; on the k-th it divides
them by k and steps, which with a mean loss is one step on a batch k times as large. The model prepared in the
same call skips the gradient all-reduce on the micro-steps (only the k-th backward communicates): DDP decides in
its forward whether the coming backward syncs, so the model says which it is before each forward.

Imported by prepare() only, when torch is in use (the optimizer subclasses torch's).
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import ArgumentError


def check_accumulate(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(
            f"accumulate={value!r}: give the number of micro-batches whose gradients make one optimizer step "
            "(an int, 1 for none)"
        )


class Accumulation:
    """What the model and the optimizer prepared in one call share: the micro-steps per optimizer step, how many
    have passed since the last step, and the fp16 gradient scaler (None without fp16)."""

    def __init__(self, every: int, scaler) -> None:
        self.every = every
        self.scaler = scaler
        self.micro_steps = 0  # backward passes whose gradients are accumulated, not yet stepped on

    @property
    def syncs(self) -> bool:
        """Whether the coming backward completes a step, so its gradients must be reduced across ranks."""
        return self.micro_steps == self.every - 1

    def watch(self, model) -> None:
        """Before each forward that records gradients, tell ``model`` (DDP or FSDP) whether its backward syncs."""
        if self.every > 1 and _reduces_gradients(model):
            model.register_forward_pre_hook(self._before_forward)

    def _before_forward(self, model, args) -> None:
        if torch.is_grad_enabled():
            set_gradient_sync(model, self.syncs)


def _reduces_gradients(model) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, (torch.nn.parallel.DistributedDataParallel, FSDPModule))


def set_gradient_sync(model, sync: bool) -> None:
    from torch.distributed.fsdp import FSDPModule

    if isinstance(model, FSDPModule):
        model.set_requires_gradient_sync(sync)
    else:  # what DDP's no_sync() sets; DDP reads it in forward
        model.require_backward_grad_sync = sync


class PreparedOptimizer(torch.optim.Optimizer):
    """The user's optimizer, stepping once per ``accumulate`` micro-steps and through the fp16 scaler.

    ``stepped`` says whether the last ``step()`` changed the parameters (False on a micro-step, or when fp16
    gradients overflowed and the scaler skipped the step): step a per-batch LR scheduler only then.
    Like Accelerate's AcceleratedOptimizer it does not call ``Optimizer.__init__``: the wrapped optimizer holds
    the parameters and the state, and the properties below read them from it.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, accumulation: Accumulation) -> None:
        self.optimizer = optimizer
        self.accumulation = accumulation
        self.stepped = False

    @property
    def scaler(self):
        """The fp16 gradient scaler (``torch.amp.GradScaler``), or None."""
        return self.accumulation.scaler

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups: list[dict[str, Any]]) -> None:
        self.optimizer.param_groups = groups

    # Read from the wrapped optimizer, where torch's Optimizer has attributes of its own (a wrapper's override).
    @property
    def state(self):  # type: ignore[override]
        return self.optimizer.state

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return self.optimizer.defaults

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        self.optimizer.add_param_group(param_group)

    def state_dict(self) -> dict[str, Any]:
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state_dict)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self.accumulation.micro_steps == 0:  # mid-window the gradients are still being added up
            self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        accumulation, scaler = self.accumulation, self.accumulation.scaler
        if closure is not None and (accumulation.every > 1 or scaler is not None):
            raise ArgumentError(
                "optimizer.step(closure): a closure re-evaluates the loss, which neither gradient accumulation "
                "nor the fp16 scaler can take; prepare this optimizer without accumulate= and fp16"
            )
        accumulation.micro_steps += 1
        if accumulation.micro_steps < accumulation.every:
            self.stepped = False
            return None
        accumulation.micro_steps = 0
        if scaler is None:
            self._average_gradients()
            self.stepped = True
            return self.optimizer.step(closure)
        scaler.unscale_(self.optimizer)
        self._average_gradients()
        scale = scaler.get_scale()
        scaler.step(self.optimizer)  # skips the step when a gradient is inf or NaN
        scaler.update()
        self.stepped = scaler.get_scale() >= scale  # the scale drops exactly when the step was skipped
        return None

    def _average_gradients(self) -> None:
        every = self.accumulation.every
        if every == 1:
            return
        with torch.no_grad():
            for group in self.optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is not None:
                        param.grad.div_(every)

    def __repr__(self) -> str:
        return f"PreparedOptimizer(accumulate={self.accumulation.every}, {self.optimizer!r})"
