"""Mixed precision for ``prepare(..., mixed_precision="bf16" | "fp16")``, and ``backward(loss)``.

As in Accelerate, the prepared model's forward runs under ``torch.autocast`` and what it returns is cast back to
float32, so the loss and everything the loop computes from the outputs keep full precision. fp16 also needs a
gradient scaler (its small range flushes small gradients to zero): ``backward(loss)`` scales the loss, and the
prepared optimizer's ``step()`` unscales, skips a step whose gradients overflowed, and adjusts the scale.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ._context import run
from ._nested import map_tensors

# What prepare() and data_parallel() accept; "no" (Accelerate's word) and None both mean full precision.
MIXED_PRECISIONS = ("bf16", "fp16", "no")


def check_mixed_precision(value: Any) -> None:
    if value is not None and value not in MIXED_PRECISIONS:
        raise ArgumentError(
            f"mixed_precision={value!r}: use 'bf16', 'fp16', or None (full precision; 'no' says the same)"
        )


def resolve_mixed_precision(given: str | None) -> str | None:
    """The precision prepare() applies: the one given, else the data_parallel run's; None for full precision."""
    check_mixed_precision(given)
    chosen = given if given is not None else run.mixed_precision
    return None if chosen in (None, "no") else chosen


def autocast_forward(model, device_type: str, precision: str) -> None:
    """Make ``model``'s forward run under autocast and return float32 (in place: state_dict keys stay as they
    are, and the DDP or FSDP wrapper put around it afterwards calls the patched forward)."""
    import torch

    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    model.forward = AutocastForward(model.forward, device_type, dtype)


class AutocastForward:
    """A model's forward under ``torch.autocast``, its floating-point outputs cast back to float32."""

    def __init__(self, forward, device_type: str, dtype) -> None:
        self.forward = forward
        self.device_type = device_type
        self.dtype = dtype

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.autocast(self.device_type, dtype=self.dtype):
            outputs = self.forward(*args, **kwargs)
        return to_float32(outputs)


def to_float32(outputs: Any) -> Any:
    """bf16/fp16 tensors in ``outputs`` (nested in tuples, lists, dicts) as float32; everything else as it is."""
    import torch

    half = (torch.float16, torch.bfloat16)
    return map_tensors(outputs, lambda tensor: tensor.float() if tensor.dtype in half else tensor)


def make_scaler(device_type: str):
    import torch

    return torch.amp.GradScaler(device_type)


def backward(loss, **kwargs: Any) -> None:
    """``loss.backward()``, scaled by the fp16 gradient scaler when the model was prepared with
    ``mixed_precision="fp16"`` (Accelerate's ``accelerator.backward(loss)``).

    Call it instead of ``loss.backward()`` whenever the run may use fp16; without a scaler it is exactly
    ``loss.backward(**kwargs)``, alone and in any trial. The prepared optimizer's ``step()`` undoes the scaling.
    """
    if run.scaler is None:
        loss.backward(**kwargs)
    else:
        run.scaler.scale(loss).backward(**kwargs)
