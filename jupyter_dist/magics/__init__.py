"""The notebook surface: ``%%distribute`` and ``%distribute_cluster``."""

from ._distribute import DistributeMagics

__all__ = ["DistributeMagics"]
