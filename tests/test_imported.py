"""A module another thread is still importing is waited for, never handed out half made.

A worker runs several trials at once; while the first to use torch imports it, another trial's placement read
``sys.modules["torch"]`` and failed with "partially initialized module 'torch' has no attribute 'cuda'". Here a
module of the test's own blocks its import half-way, on an event, while a second thread looks it up.
"""

from __future__ import annotations

import sys
import threading

from waiting import wait_until

from jupyter_dist._imported import imported

SLOW_MODULE = """
import threading
HALF = "made before the wait"
started.set()
go.wait(30)
WHOLE = "made after the wait"
"""


def _inside_the_import_lock(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "_find_and_load":
            return True
        frame = frame.f_back
    return False


def test_a_module_being_imported_in_another_thread_is_returned_whole(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "jd_slow_module.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    started, go = threading.Event(), threading.Event()
    # the module's body reads its two events from builtins: it has no other way to reach the test
    monkeypatch.setattr(builtins, "started", started, raising=False)
    monkeypatch.setattr(builtins, "go", go, raising=False)
    importer = threading.Thread(target=__import__, args=("jd_slow_module",))
    importer.start()
    try:
        assert started.wait(30)
        assert getattr(sys.modules["jd_slow_module"], "WHOLE", None) is None  # half made, in sys.modules
        found: list = []
        looker = threading.Thread(target=lambda: found.append(imported("jd_slow_module")))
        looker.start()
        wait_until(lambda: _inside_the_import_lock(looker) or not looker.is_alive(), timeout=30)
        go.set()
        looker.join(30)
        assert found[0].WHOLE == "made after the wait"
    finally:
        go.set()
        importer.join(30)
        sys.modules.pop("jd_slow_module", None)


def test_a_module_nobody_imported_is_not_imported():
    assert imported("jd_never_imported_module") is None
    assert "jd_never_imported_module" not in sys.modules
    assert imported("json") is sys.modules["json"]


KEEPS_ITS_IMPORT_ERROR = """
try:
    import jd_no_such_backend
except ImportError as caught:
    kept = caught  # as optuna keeps its optional backends' errors, to raise when one is used
"""


def test_a_module_imported_apart_keeps_none_of_the_callers_frames(tmp_path, monkeypatch):
    import gc
    import weakref

    from jupyter_dist._imported import imported_apart

    (tmp_path / "jd_keeps_errors.py").write_text(KEEPS_ITS_IMPORT_ERROR)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Study:  # what a run's frame holds
        pass

    def a_run(study: Study) -> None:
        imported_apart("jd_keeps_errors")

    study = Study()
    alive = weakref.ref(study)
    try:
        a_run(study)
        assert sys.modules["jd_keeps_errors"].kept.__traceback__ is not None
        del study
        gc.collect()
        assert alive() is None, "the module's kept traceback holds the caller's frames"
    finally:
        sys.modules.pop("jd_keeps_errors", None)
