"""``ablate(model)``: the one line a training function adds so an ablation study can leave its modules out.

The training function stays oblivious: outside an ablation trial ``ablate`` returns the model untouched. Inside
one, ``AblationTrial`` (the wrapper the study ships to the workers instead of the bare function) tells it, through
a thread-local, which modules this trial leaves out.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ..errors import AblationError, ArgumentError
from ..trials import current_trial

__all__ = ["ablate", "AblationTrial"]


class _Removal(threading.local):
    modules: tuple[str, ...] | None = None  # every module the study names; None outside an ablation trial
    remove: tuple[str, ...] = ()
    applied = False


_removal = _Removal()


def ablate(model):
    """Return ``model`` with the submodules this ablation trial leaves out replaced by identities.

    Use it once, right after building the model: ``model = jupyter_dist.ablate(model)``. In the baseline, in
    other studies' trials and outside any experiment the model comes back unchanged. Every module the study
    names must exist in the model (checked in every trial, so a typo fails the baseline at once).
    """
    if _removal.modules is None:
        return model
    import torch

    from ._identity import Ablated

    if not isinstance(model, torch.nn.Module):
        raise ArgumentError(f"ablate() takes a torch.nn.Module, got {type(model).__name__}")
    named = dict(model.named_modules())
    missing = [m for m in _removal.modules if m not in named]
    if missing:
        available = ", ".join(repr(n) for n in named if n) or "none"
        raise AblationError(
            f"the model has no module {', '.join(map(repr, missing))}; its modules are: {available}"
        )
    for name in _removal.remove:
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, Ablated(name))
    if _removal.remove:
        model.forward = _NamesRemovedOnError(model.forward, _removal.remove)
    _removal.applied = True
    return model


class _NamesRemovedOnError:
    """The model's forward, turning a shape error after a removal into one that names the removed module."""

    def __init__(self, forward: Callable, removed: tuple[str, ...]) -> None:
        self.forward = forward
        self.removed = removed

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.forward(*args, **kwargs)
        except RuntimeError as exc:
            names = ", ".join(map(repr, self.removed))
            raise AblationError(
                f"removing module {names} broke the model's forward pass: the identity that replaces it passes "
                f"its input through unchanged, and the next layer does not accept that shape ({exc}). Leave "
                "out only modules whose input and output shapes match."
            ) from exc


class AblationTrial:
    """The training function as an ablation study runs it: sets up ``ablate()`` for the trial's variant.

    Picklable (it travels to the workers once per study), and it looks like the function to ``inspect``.
    """

    def __init__(self, fn: Callable, modules: tuple[str, ...], removed: dict[int, tuple[str, ...]]) -> None:
        self.fn = fn
        self.modules = modules
        self.removed = removed
        functools.update_wrapper(self, fn)

    def __call__(self, **kwargs: Any) -> Any:
        ctx = current_trial()
        remove = self.removed.get(ctx.trial_id, ()) if ctx is not None else ()
        _removal.modules, _removal.remove, _removal.applied = self.modules, remove, False
        try:
            result = self.fn(**kwargs)
        finally:
            applied, _removal.modules, _removal.remove = _removal.applied, None, ()
        if self.modules and not applied:
            raise AblationError(
                f"the study leaves out modules ({', '.join(map(repr, self.modules))}), but "
                f"{getattr(self.fn, '__name__', 'the training function')}() never called "
                "jupyter_dist.ablate(model): add `model = jupyter_dist.ablate(model)` after building the model"
            )
        return result
