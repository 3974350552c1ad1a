"""The kernel's side of a live export: a child process per experiment writes to the tracker, fed by a thread.

The callbacks' hooks run on the trial loop's thread and the report listener on Dask's IO thread, both of which the
run needs. So a hook only appends an event to a deque, and the report listener a batch of reports it encodes at
once (msgpack, ~0.3 us a report). A thread of the exporter takes what has gathered every ``INTERVAL`` seconds
and writes it as one message to the pipe of a child process (``python -m
jupyter_dist.tracking._export_worker``), which makes the tracker's writer and does everything else: MLflow's
client and its HTTP requests, TensorBoard's event files. Measured
(bench_tracking) with that work on a thread of the kernel: it competed with the trial loop for the GIL, and 1000
no-op trials took 10x longer with MLflow, 4.5x with TensorBoard; a tight report loop lost 25% and 49% of its rate.

The child runs at the lowest CPU priority (a busy run finishes first; the export catches up), in a session of
its own (a notebook's interrupt is not for it), and ends by itself: once told that the experiment ended and
everything is written; or, when the kernel is gone (its pipe closes, its parent changes), after at most the
callback's ``timeout`` to write what it has. The experiment's end does not wait for the export: ``wait()`` does,
and at the kernel's exit an ``atexit`` hook gives the exports still going ``timeout`` seconds before ending them.

A failure of the export (the server down, the folder not writable) is the child's first reply; the kernel reports
it once, as a warning from the next hook, from the experiment's end or from ``wait()``.
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import sys
import threading
import time
import warnings
from collections import deque
from typing import Any

import msgpack

from ._events import Event, encode

# How often the exporter's thread sends what has gathered: a batch per second keeps a tracking server's UI close
# to live while a run reporting thousands of times a second makes a handful of requests, not thousands.
INTERVAL = 1.0
WORKER = "jupyter_dist.tracking._export_worker"

_live: list[Exporter] = []  # exports not yet waited for: what wait() and the kernel's exit look at
_live_lock = threading.Lock()


class Exporter:
    """One live experiment's export: hooks ``put`` events (a deque append), a thread sends them in batches to the
    child process that writes them."""

    def __init__(
        self, destination: tuple[str, dict[str, Any]], where: str, experiment: str, kind: type, timeout: float
    ) -> None:
        self.where = where  # e.g. "MLflow tracking server http://host:5000": what a warning names
        self.experiment = experiment
        self.kind = kind  # the callback's class: MLflow.wait() waits for MLflow's exports only
        self.experiment_id: str | None = None
        self.timeout = timeout
        self._destination = destination
        self._events: deque[Event | bytes] = deque()  # a report batch comes encoded
        self._done = threading.Event()  # the experiment ended: send the rest, then tell the child
        self._finished = threading.Event()  # the child is gone: everything written, or a failure
        self._failure: str | None = None
        self._warned = False
        self._process: subprocess.Popen | None = None
        self._replies = msgpack.Unpacker(raw=False)
        with _live_lock:  # the exports done and said are forgotten: wait() has nothing to say of them
            _live[:] = [e for e in _live if not e.finished or (e._failure is not None and not e._warned)]
            _live.append(self)
        # Starting the child (a fork and exec) is the thread's, not the loop's.
        self._thread = threading.Thread(target=self._run, name=f"jupyter_dist {where}", daemon=True)
        self._thread.start()

    def put(self, event: Event) -> None:
        if self._failure is None:
            self._events.append(event)
        elif not self._warned:
            self._warn(f"failed ({self._failure})")

    def report(self, trial_id: int, rows: list) -> None:
        """The report listener, on Dask's IO thread: the batch encoded at once (msgpack, ~0.3 us a report), so
        its rows are not kept alive for the thread (they would outlive young collections and fill the old
        generation the kernel's full collections scan) and the thread has no long encoding to hold the GIL
        for. Never a warning from there: a hook says it."""
        if self._failure is None:
            try:
                self._events.append(msgpack.packb(["R", trial_id, rows]))
            except Exception as exc:  # not plain values: the export stops, the run goes on
                self._failure = f"{type(exc).__name__}: {exc}"

    def finish(self, event: Event) -> None:
        """Put the last event and return: the thread sends the rest and the child writes it on its own time."""
        self.put(event)
        self._done.set()
        if self._failure is not None and not self._warned:
            self._warn(f"failed ({self._failure})")

    def wait(self, timeout: float | None, asked: float | None = None) -> bool:
        """Wait, at most ``timeout`` seconds (None: as long as it takes), for everything to be written; warn once
        if it failed or is not done by then (naming the ``asked`` wait). True: all of it is there."""
        self._finished.wait(timeout)
        if self._failure is not None:
            if not self._warned:
                self._warn(f"failed ({self._failure})")
            return False
        if not self._finished.is_set():
            if not self._warned:
                asked = timeout if asked is None else asked
                self._warn(f"did not take the last writes within {asked:g} s (wait(timeout=))")
            return False
        return True

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def _warn(self, what: str) -> None:
        self._warned = True
        warnings.warn(
            f"jupyter_dist: {self.where} {what}; experiment {self.experiment!r} is not fully sent there. It ran "
            "on and is complete in jupyter_dist's store: load() it and send it again with to_mlflow() / "
            "to_tensorboard()",
            RuntimeWarning,
            stacklevel=4,
        )

    # --- the thread -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
            factory, kwargs = self._destination
            self._send({"destination": factory, "kwargs": kwargs, "timeout": self.timeout})
            while True:
                done = self._done.wait(INTERVAL)
                self._read_replies(block=False)
                batch = self._take()
                if batch and self._failure is None:
                    self._send_events(batch)
                if done and not self._events:
                    break
            self._send(["finish"])
            process = self._process
            assert process.stdin is not None and process.stdout is not None  # it was started with both pipes
            process.stdin.close()
            while self._read_replies(block=True):  # until the child closes its end: it has written everything
                pass
            process.stdout.close()
            code = process.wait()
            if code != 0 and self._failure is None:
                self._failure = f"the export process ended with exit code {code}"
        except Exception as exc:  # the run goes on without this tracker; a hook, the end or wait() says so
            self._failure = self._failure or f"{type(exc).__name__}: {exc}"
            self._events.clear()
        finally:
            self._finished.set()

    def _send(self, message: Any) -> None:
        self._write(msgpack.packb(message))

    def _send_events(self, batch: list[Event | bytes]) -> None:
        """``["events", [...]]``, the report batches as the listener encoded them, the other events encoded now."""
        items = [e if isinstance(e, bytes) else msgpack.packb(encode(e)) for e in batch]
        n = len(items)  # msgpack's array header, written here to join the items already encoded
        header = (
            bytes([0x90 | n])
            if n < 16
            else b"\xdc" + n.to_bytes(2, "big")
            if n < 2**16
            else b"\xdd" + n.to_bytes(4, "big")
        )
        self._write(b"\x92" + msgpack.packb("events") + header + b"".join(items))

    def _write(self, data: bytes) -> None:
        process = self._process
        assert process is not None and process.stdin is not None  # started, with its pipes, before any write
        try:
            process.stdin.write(data)
            process.stdin.flush()
        except BrokenPipeError:  # the child is gone: its reply, or its exit code, says why
            self._read_replies(block=True)
            if self._failure is None:
                self._failure = f"the export process ended with exit code {process.wait()}"
            raise

    def _read_replies(self, block: bool) -> bool:
        """Take the child's replies (its first failure; "done"); False once it has closed its end."""
        assert self._process is not None and self._process.stdout is not None  # started, with its pipes
        out = self._process.stdout
        if not block and not select.select([out], [], [], 0)[0]:
            return True
        data = os.read(out.fileno(), 65536)
        if not data:
            return False
        self._replies.feed(data)
        for reply in self._replies:
            if "failed" in reply and self._failure is None:
                self._failure = reply["failed"]
                self._events.clear()
        return True

    def _take(self) -> list[Event | bytes]:
        batch = []
        while self._events:  # popleft is atomic: a hook may append meanwhile
            batch.append(self._events.popleft())
        return batch

    def _end(self) -> None:
        """The kernel is exiting and this export is still going after its ``timeout``: end the child."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
            self._thread.join(1.0)  # it reads the child's end to its close, and closes it


def wait_for(kind: type, experiment: Any = None, timeout: float | None = None) -> bool:
    """Wait for the live exports of trackers of class ``kind`` (of one experiment, given as an Experiment or its
    id), at most ``timeout`` seconds in all; each failure or export not done is warned about once. True: all of
    them are written."""
    experiment_id = getattr(experiment, "id", experiment)
    with _live_lock:
        exports = [
            e
            for e in _live
            if issubclass(e.kind, kind) and (experiment_id is None or e.experiment_id == experiment_id)
        ]
    deadline = None if timeout is None else time.monotonic() + timeout
    complete = True
    for export in exports:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        complete = export.wait(left, timeout) and complete
    with _live_lock:
        for export in exports:
            if export.finished and export in _live:
                _live.remove(export)
    return complete


@atexit.register
def _at_exit() -> None:
    """The kernel is exiting: the experiments still exporting (interrupted ones too) get their ``timeout`` to
    finish writing, then their processes end; what is not written is said, once, on stderr."""
    with _live_lock:
        exports = [e for e in _live if not e.finished]
    if not exports:
        return
    for export in exports:
        export._done.set()
    deadline = time.monotonic() + max(e.timeout for e in exports)
    for export in exports:
        export._finished.wait(max(0.0, min(deadline, time.monotonic() + export.timeout) - time.monotonic()))
        if not export.finished:
            export._end()
            print(
                f"jupyter_dist: {export.where} did not take experiment {export.experiment!r}'s last writes before "
                f"the kernel exited (timeout={export.timeout:g}); it is complete in jupyter_dist's store",
                file=sys.stderr,
            )
