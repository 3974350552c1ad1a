"""The kernel's garbage collector during a run: what it held before and what survives a full collection is frozen
(not scanned again), the youngest generation collected less often, and all of it as it was when the run ends."""

import gc

from jupyter_dist.runtime import quiet_collector
from jupyter_dist.runtime._collector import RUN_THRESHOLD


def test_a_run_freezes_what_the_kernel_holds_and_what_survives_and_hands_it_back():
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    kept = []
    with quiet_collector():
        assert gc.get_threshold()[0] == max(thresholds[0], RUN_THRESHOLD)
        held = gc.get_freeze_count()
        assert held > 0  # the kernel's objects before the run
        kept.extend([i] for i in range(10_000))  # the run's own containers, alive across a full collection
        gc.collect()
        assert gc.get_freeze_count() >= held + 10_000
        with quiet_collector():  # a second run at once (another thread's): nothing is handed back at its end
            pass
        assert gc.get_freeze_count() >= held + 10_000
    assert gc.get_freeze_count() == 0  # all handed back: cycles among them are collectable again
    assert gc.get_threshold() == thresholds


def test_what_the_process_froze_itself_stays_frozen():
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with quiet_collector():
            pass
        assert gc.get_freeze_count() >= before
    finally:
        gc.unfreeze()
