"""Ctrl-C (the kernel's interrupt) as a graceful stop, installed once around a whole run."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class StopSignal:
    """How a run is asked to stop: a flag any thread (a Stop button, a signal handler) may set, and the count
    of interrupts, which escalates a stop."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.interrupts = 0
        self.timed_out = False

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self) -> None:
        """Only sets a flag: safe from any thread and from a signal handler."""
        self._event.set()


@contextlib.contextmanager
def interrupts_stop(stop: StopSignal) -> Iterator[None]:
    """While inside, Ctrl-C asks for a graceful stop, a second one abandons the running trials, a third
    raises KeyboardInterrupt. A handler, not ``except KeyboardInterrupt``: the exception could land anywhere in
    the run loop, even between two statements that must not be torn apart."""

    def on_interrupt(signum, frame):
        stop.interrupts += 1
        stop.request()
        if stop.interrupts > 2:
            raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, on_interrupt)
    except ValueError:  # not the main thread: there is no Ctrl-C to catch here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
