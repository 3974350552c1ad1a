"""Counting, across worker processes, how many trials (or attempts) came to one place before."""

from __future__ import annotations

import os


def ticket(folder: str) -> int:
    """The order in which callers got here, across processes: 0, 1, 2, ... (one file each, made atomically)."""
    n = 0
    while True:
        try:
            os.close(os.open(os.path.join(folder, str(n)), os.O_CREAT | os.O_EXCL))
            return n
        except FileExistsError:
            n += 1
