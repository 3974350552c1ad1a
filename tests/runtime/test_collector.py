"""The kernel's garbage collector during a run: what it held before and what survives a full collection is frozen
(not scanned again), the youngest generation collected less often, and all of it as it was when the run ends."""

import gc

from jupyter_dist.trials import quiet_collector
from jupyter_dist.trials._collector import RUN_THRESHOLD


def frozen(objects: list) -> list[bool]:
    """Whether each of ``objects`` (containers the collector tracks) is frozen: in none of its generations.
    Compared object by object: the freeze count also drops as other threads free frozen objects of their own."""
    scanned = {id(o) for o in gc.get_objects()}
    assert all(gc.is_tracked(o) for o in objects)
    return [id(o) not in scanned for o in objects]


def test_a_run_freezes_what_the_kernel_holds_and_what_survives_and_hands_it_back():
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    before = [[i] for i in range(100)]  # the kernel's objects before the run
    kept = []
    with quiet_collector():
        assert gc.get_threshold()[0] == max(thresholds[0], RUN_THRESHOLD)
        assert all(frozen(before))
        kept.extend([i] for i in range(10_000))  # the run's own containers, alive across a full collection
        assert not any(frozen(kept))
        gc.collect()
        assert all(frozen(kept))
        with quiet_collector():  # a second run at once (another thread's): nothing is handed back at its end
            pass
        assert all(frozen(before + kept))
    assert gc.get_freeze_count() == 0  # all handed back: cycles among them are collectable again
    assert not any(frozen(before + kept))
    assert gc.get_threshold() == thresholds


def test_what_the_process_froze_itself_stays_frozen():
    mine = [[i] for i in range(100)]
    gc.freeze()
    try:
        with quiet_collector():
            pass
        assert all(frozen(mine))
    finally:
        gc.unfreeze()
