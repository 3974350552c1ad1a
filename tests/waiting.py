"""Waiting in a test for something to become true, instead of sleeping a guessed time and then asserting.

A sleep long enough on an idle machine is too short on a loaded one (the suite runs on 2 cores beside other
work), and always wastes its whole length; waiting on the condition returns as soon as it holds and fails, saying
what was awaited, only when it never does within a generous ``timeout``. The timeout is a bound on a hang, not a
claim about speed: a test whose subject is latency asserts that separately.

Importable from every test folder as ``from waiting import wait_until`` (tests/ is on sys.path through
tests/conftest.py, as for process_tools).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.02


def wait_until(
    predicate: Callable[[], T], timeout: float = 30.0, message: str = "", poll: float = POLL_S
) -> T:
    """Call ``predicate`` until it returns something true, and return that; AssertionError after ``timeout``
    seconds, naming ``message`` (what was awaited) and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"waited {timeout:g} s for {message or getattr(predicate, '__name__', 'a condition')}; "
                f"last seen: {value!r:.300}"
            )
        time.sleep(poll)


async def async_wait_until(
    predicate: Callable[[], T], timeout: float = 30.0, message: str = "", poll: float = POLL_S
) -> T:
    """``wait_until`` for a coroutine test: the event loop (a server the test talks to) runs between the calls."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"waited {timeout:g} s for {message or getattr(predicate, '__name__', 'a condition')}; "
                f"last seen: {value!r:.300}"
            )
        await asyncio.sleep(poll)
