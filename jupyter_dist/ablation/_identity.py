"""The stand-in for a removed module. Its own module because it imports torch, which ``ablate()`` defers."""

from __future__ import annotations

import torch


class Ablated(torch.nn.Identity):
    """Passes its first input through unchanged, and says in ``print(model)`` which module it replaced."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.removed = name

    def extra_repr(self) -> str:
        return f"removed {self.removed!r}"
