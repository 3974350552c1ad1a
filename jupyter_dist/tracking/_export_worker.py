"""The export process: ``python -m jupyter_dist.tracking._export_worker``, started by the kernel for one
experiment (``_export_process``), writes its events to the tracker.

Stdin: msgpack messages from the kernel, first ``{"destination": "module:Class", "kwargs": ..., "timeout": s}``,
then ``["events", [event, ...]]`` about once a second, last ``["finish"]``. Stdout: msgpack replies, the first
failure (``{"failed": "Error: why"}``) and ``{"done": true}``; what libraries print goes to stderr instead.

A thread reads stdin as it comes (the kernel's writes never wait for a slow server) while the main thread writes
whatever has gathered, so a server that falls behind gets fewer, bigger batches. After a failure nothing more is
written; the messages are read and dropped until the end. It ends by itself: after ``finish``; or when the kernel
is gone (stdin closed without ``finish``, or a new parent), after writing what it has for at most ``timeout``.
"""

from __future__ import annotations

import importlib
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator

import msgpack

from ._events import Destination, Event, Reported, decode

_EOF = object()
# While the experiment runs, the process writes at most this share of the time: what it writes costs CPU, its own
# (at nice 19, yet it takes a slice of a core from the workers) and a tracking server's on this machine (at the
# server's priority). A run reporting a few times a second is written as it goes; a tight report loop (~90k
# reports a second) falls behind and is caught up after the run's end. Measured with bench_tracking (1 round),
# writing flat out during the run cost the tight loop 8% of its reports/s with MLflow (a server on the same 2
# cores), 18% with TensorBoard (the process kept up with ~80k reports a second: most of a core, nice or not);
# with a tenth of the time (3 rounds), 5.6% and 7.4%.
# (JUPYTER_DIST_EXPORT_LIVE_SHARE sets it, for such measurements: 1, no limit.)
LIVE_SHARE = float(os.environ.get("JUPYTER_DIST_EXPORT_LIVE_SHARE", "0.05"))
# The events are written in chunks of about this many reports (another event counts as 50: a trial's run made or
# ended is a request or two, as long as a log_batch of 1000 metrics), so the share above is kept closely.
CHUNK = 2000
EVENT_WEIGHT = 50


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a notebook's interrupt is the run's, not the export's
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)  # a busy run first: the export catches up when the CPU is free
    except (OSError, AttributeError):  # not allowed, or not a POSIX system: the default priority
        pass
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # MLflow prints; its prints must not mix with the replies
    parent = os.getppid()

    inbox: queue.Queue = queue.Queue()
    unpacker = msgpack.Unpacker(sys.stdin.buffer, raw=False, strict_map_key=False, max_buffer_size=2**31 - 1)

    ended = threading.Event()  # the experiment's end (or the kernel's): from then on, flat out

    def read() -> None:
        try:
            for message in unpacker:
                if isinstance(message, list) and message[0] == "finish":
                    ended.set()
                inbox.put(message)
        finally:
            ended.set()
            inbox.put(_EOF)

    threading.Thread(target=read, daemon=True).start()
    spec = inbox.get()
    if spec is _EOF:
        return 0
    timeout = float(spec.get("timeout", 10.0))

    def orphaned() -> None:
        """The kernel gone without a word: what is left gets ``timeout`` seconds, then the process ends."""
        while os.getppid() == parent:
            time.sleep(0.5)
        time.sleep(timeout)
        os._exit(3)

    threading.Thread(target=orphaned, daemon=True).start()

    destination: Destination | None = None
    failed = False
    finished = False
    try:
        module, _, name = spec["destination"].partition(":")
        destination = getattr(importlib.import_module(module), name)(**spec["kwargs"])
    except Exception as exc:
        failed = _fail(replies, exc)
    while not finished:
        messages = [inbox.get()]
        while not inbox.empty():
            messages.append(inbox.get_nowait())
        events: list[Event] = []
        for message in messages:
            if message is _EOF:
                if finished:  # the kernel closes the pipe after "finish"
                    continue
                # The kernel died: what came is written, for at most timeout seconds.
                finished = True
                threading.Thread(target=_exit_after, args=(timeout,), daemon=True).start()
            elif message[0] == "finish":
                finished = True
            elif not failed:
                events.extend(decode(item) for item in message[1])
        if events and not failed and destination is not None:  # (made, or failed is set)
            try:
                for chunk in _chunks(events):
                    started = time.monotonic()
                    destination.write(chunk)
                    if not ended.is_set():  # while the run goes, a LIVE_SHARE of the time at most
                        ended.wait((time.monotonic() - started) * (1 - LIVE_SHARE) / LIVE_SHARE)
            except Exception as exc:
                failed = _fail(replies, exc)
    if destination is not None:
        try:
            destination.close()
        except Exception as exc:
            if not failed:
                failed = _fail(replies, exc)
    _reply(replies, {"done": not failed})
    return 0


def _chunks(events: list[Event]) -> Iterator[list[Event]]:
    chunk: list[Event] = []
    size = 0
    for event in events:
        pieces: list[Event]
        if type(event) is Reported and len(event.rows) > CHUNK:
            rows = event.rows
            pieces = [Reported(event.trial_id, rows[i : i + CHUNK]) for i in range(0, len(rows), CHUNK)]
        else:
            pieces = [event]
        for piece in pieces:
            chunk.append(piece)
            size += len(piece.rows) if type(piece) is Reported else EVENT_WEIGHT
            if size >= CHUNK:
                yield chunk
                chunk, size = [], 0
    if chunk:
        yield chunk


def _fail(replies, exc: BaseException) -> bool:
    _reply(replies, {"failed": f"{type(exc).__name__}: {exc}"})
    return True


def _reply(replies, message: dict) -> None:
    try:
        replies.write(msgpack.packb(message))
    except OSError:  # the kernel is gone: nobody to tell
        pass


def _exit_after(seconds: float) -> None:
    time.sleep(seconds)
    os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
