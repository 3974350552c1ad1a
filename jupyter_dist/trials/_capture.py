"""A trial's stdout and stderr, captured on the worker and streamed to the kernel a line at a time.

``sys.stdout``/``sys.stderr`` of the worker process are replaced once by streams that hand a trial thread's
writes to its trial and pass every other thread's through (the worker's own logging stays where it was).
"""

from __future__ import annotations

import io
import sys
import threading

from ._trial_context import TrialContext, current_trial


class _CapturedStream(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr in a worker: a trial thread's writes go to its trial, others pass."""

    def __init__(self, name: str, original) -> None:
        self.name = name
        self.original = original

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        capture = _captures.get(id(current_trial()))
        if capture is None:
            return self.original.write(text)
        capture.write(self.name, text)
        return len(text)

    def flush(self) -> None:
        self.original.flush()

    def isatty(self) -> bool:
        return False

    # (read-only: the original stream's, where TextIOBase declares a plain attribute)
    @property
    def encoding(self):  # type: ignore[override]  # some libraries ask the stream for its encoding
        return getattr(self.original, "encoding", "utf-8")


class TrialOutput:
    """The stdout/stderr of one trial attempt, streamed to the kernel a line at a time."""

    def __init__(self, ctx: TrialContext) -> None:
        self.ctx = ctx
        self.pending = {"stdout": "", "stderr": ""}
        # Every rank of a data-parallel trial prints into the same trial output: label its lines.
        self.label = f"[rank {ctx.rank}] " if ctx.world_size > 1 else ""

    def __enter__(self) -> TrialOutput:
        _install()
        _captures[id(self.ctx)] = self
        return self

    def __exit__(self, *exc) -> None:
        del _captures[id(self.ctx)]
        for stream, text in self.pending.items():
            if text:
                self._send(stream, text)

    def write(self, stream: str, text: str) -> None:
        pending = self.pending[stream] + text
        cut = pending.rfind("\n") + 1
        if cut:
            self._send(stream, pending[:cut])
            pending = pending[cut:]
        self.pending[stream] = pending

    def _send(self, stream: str, text: str) -> None:
        if self.label:
            text = "".join(self.label + line for line in text.splitlines(keepends=True))
        self.ctx.send_log(stream, text)


_captures: dict[int, TrialOutput] = {}
_install_lock = threading.Lock()


def _install() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _CapturedStream):
            sys.stdout = _CapturedStream("stdout", sys.stdout)
        if not isinstance(sys.stderr, _CapturedStream):
            sys.stderr = _CapturedStream("stderr", sys.stderr)
