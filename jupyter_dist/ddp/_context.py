"""Where the calling code runs: its rank, the world size, and its devices.

``rank()``, ``world_size()`` and ``is_main()`` work everywhere: in a data-parallel trial they come from the trial,
under another launcher (torchrun) from torch.distributed, and alone they are 0, 1 and True.

The trial's run state is here too: prepare()'s defaults and, per trial attempt, the DataLoaders it prepared
(``run.loaders``), whose places in their epochs checkpoint() saves.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

from .._imported import imported
from ..trials import current_trial


class PreparedLoaders:
    """The DataLoaders prepare() made in one trial attempt, in the order it made them, and the positions in their
    epochs that the attempt's restore() brought back: checkpoint() saves every loader's, and a loader made after
    restore() takes the one saved for the loader made at its place in that order."""

    def __init__(self) -> None:
        self.loaders: list = []
        self.restored: list[dict] = []

    def add(self, loader) -> None:
        index = len(self.loaders)
        self.loaders.append(loader)
        if index < len(self.restored):
            loader.load_state_dict(self.restored[index])

    def states(self) -> list[dict]:
        return [loader.state_dict() for loader in self.loaders]

    def restore(self, states: list[dict]) -> None:
        self.restored = list(states)
        for loader, state in zip(self.loaders, self.restored, strict=False):
            loader.load_state_dict(state)


# Keyed on the trial attempt's context, not held by the thread: a new attempt (a retry, an elastic job regrouped)
# on the same thread prepares its loaders anew and must not find the old attempt's, and an ended attempt's
# loaders (with their datasets) go when its context does.
_loaders_of_attempt: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Run(threading.local):
    # the rank's torch.device while a data-parallel trial runs on this thread; None otherwise
    device: torch.device | None = None
    # prepare()'s defaults inside a data_parallel(strategy=..., mixed_precision=...) run; None: its own defaults.
    strategy: str | None = None
    mixed_precision: str | None = None
    # The GradScaler of the latest prepare() that took a model or an optimizer (fp16 only): backward() scales
    # with it. Kept here, not on the model, because the user's loop calls jupyter_dist.backward(loss) alone.
    scaler: Any = None  # a torch.amp.GradScaler
    # The ShardedLoader whose last batch is out (set while the loop body runs on it): gather_for_metrics()
    # drops the samples its sampler repeated to even out the ranks.
    final_batch_of: Any = None  # a ShardedLoader (_loader.py, which imports this module)

    @property
    def loaders(self) -> PreparedLoaders | None:
        """The current trial attempt's prepared DataLoaders; None outside a trial (nothing would checkpoint them)."""
        ctx = current_trial()
        if ctx is None:
            return None
        return _loaders_of_attempt.setdefault(ctx, PreparedLoaders())


run = _Run()


def _torch_distributed():
    torch = imported("torch")  # never import torch just to say "rank 0"
    if torch is None:
        return None
    dist = torch.distributed
    return dist if dist.is_available() and dist.is_initialized() else None


def rank() -> int:
    """This process's rank in the data-parallel job (0 when there is none)."""
    ctx = current_trial()
    if ctx is not None:
        return ctx.rank
    dist = _torch_distributed()
    return dist.get_rank() if dist is not None else 0


def world_size() -> int:
    """How many ranks the data-parallel job has (1 when there is none)."""
    ctx = current_trial()
    if ctx is not None:
        return ctx.world_size
    dist = _torch_distributed()
    return dist.get_world_size() if dist is not None else 1


def is_main() -> bool:
    """True on rank 0, and whenever there is no data-parallel job: where to print, save and evaluate."""
    return rank() == 0


def devices() -> list:
    """The GPUs this trial may use, as ``torch.device`` objects in the worker's CUDA numbering.

    An HPO or ablation trial run with ``gpus_per_trial=n`` holds n of its worker's declared GPUs (no other
    trial is given them while it runs); a data-parallel rank on a GPU has its own. Empty on CPU, and outside a
    trial. Put the model on the first: ``model.to(jupyter_dist.devices()[0])``.
    """
    ctx = current_trial()
    if ctx is not None and ctx.devices:
        import torch

        return [torch.device("cuda", i) for i in ctx.devices]
    if run.device is not None and run.device.type == "cuda":
        return [run.device]
    return []
