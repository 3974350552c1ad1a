"""Seeds: the rule that kernel and workers share for each trial's seed.

A trial's seed is derived from its experiment's seed and what identifies the trial (its id; a PBT segment's member
and last step; an ablation variant's repeat), and a data-parallel rank's from its trial's seed and its rank. The
kernel derives a trial's seed (it is recorded, so ``exp.reproduce`` can run the trial again) and the worker a
rank's. NumPy's ``SeedSequence`` mixes the keys: seeds derived from neighbouring ids are unrelated streams, which
``experiment seed + trial id`` would not be (two experiments seeded 1 and 2 would share all but one trial's).
"""

from __future__ import annotations

import secrets

__all__ = ["SEED_RANGE", "derive_seed", "draw_seed"]

# What Python's random, NumPy's legacy global generator and torch all take: 0 <= seed < 2**32.
SEED_RANGE = 2**32


def derive_seed(seed: int, *keys: int) -> int:
    """The seed of what ``keys`` name within ``seed``'s experiment (or trial): the same keys, the same seed."""
    import numpy as np

    return int(
        np.random.SeedSequence([seed % SEED_RANGE, *(int(k) % SEED_RANGE for k in keys)]).generate_state(1)[0]
    )


def draw_seed() -> int:
    """An experiment's seed when its user gave none: drawn, then recorded like a given one."""
    return secrets.randbelow(SEED_RANGE)
