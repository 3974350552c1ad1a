"""Asynchronous trial scheduling on Dask: keep ``parallel`` trials in flight, start the next as each one ends.

The scheduler is generic: a *source* decides what to run (HPO asks Optuna, ablation walks its plan) and a
*sink* records what happened (the Experiment). It runs on the kernel's main thread so that Ctrl-C reaches it,
and calls ``idle()`` between waits so a view can redraw and a Stop button can be heard.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

import cloudpickle

from ._channel import EventChannel, forget_on_workers, stop_on_workers
from ._runner import probe_function, run_trial

__all__ = ["TrialScheduler", "TrialSource", "TrialSink", "TrialFunctionError"]

# How long a finished trial's outcome event may lag its future before the result is gathered instead.
OUTCOME_GRACE = 1.0
# Trials shorter than this are dominated by dispatch latency (Dask batches client->scheduler messages every
# 10 ms): for them three extra trials per slot are queued ahead so no worker waits for its next task. Longer trials
# get none, so the sampler always decides with the most recent results.
SHORT_TRIAL = 0.05


class TrialFunctionError(RuntimeError):
    """The training function cannot run on the workers at all (e.g. a module they cannot import)."""


class TrialSource(Protocol):
    def next_trial(self) -> tuple[int, dict[str, Any]] | None: ...

    def tell(self, record: Any) -> None: ...


class TrialSink(Protocol):
    def trial_started(self, trial_id: int, params: dict[str, Any]) -> None: ...

    def report(self, trial_id: int, attempt: str, step: int, metrics: dict, sent_at: float) -> None: ...

    def log(self, trial_id: int, attempt: str, stream: str, text: str) -> None: ...

    def trial_finished(self, trial_id: int, outcome: dict) -> Any: ...


def _lost_outcome(state: str, error: str | None) -> dict:
    """The outcome of a trial whose task never gave one (worker lost, cancelled, abandoned)."""
    return {
        "attempt": None,
        "state": state,
        "returned": None,
        "last": {},
        "steps": None,
        "started": None,
        "duration": None,
        "error": error,
    }


class TrialScheduler:
    def __init__(
        self,
        client,
        fn: Callable,
        exp_id: str,
        *,
        parallel: int,
        poll_interval: float = 0.1,
        idle_interval: float = 0.1,
        stop_grace: float = 10.0,
    ) -> None:
        if parallel < 1:
            raise ValueError(f"parallel must be at least 1, got {parallel}")
        self.client = client
        self.exp_id = exp_id
        self.parallel = parallel
        self.poll_interval = poll_interval
        self.idle_interval = idle_interval
        self.stop_grace = stop_grace
        self.topic = f"jupyter_dist-{exp_id}"
        self._fn_blob = cloudpickle.dumps(fn)
        self._stop = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        """Stop gracefully: start no more trials, tell the running ones to stop, keep what finished."""
        if not self._stop.is_set():
            self._stop.set()
            stop_on_workers(self.client, self.exp_id)

    def check_function(self, timeout: float = 60.0) -> None:
        """Load the training function on a worker once, so an unimportable module fails fast and clearly."""
        future = self.client.submit(
            probe_function, self.exp_id, self._fn_blob, pure=False, key=f"jupyter_dist-probe-{self.exp_id}"
        )
        try:
            problem = future.result(timeout=timeout)
        except TimeoutError:
            raise TrialFunctionError(
                f"no Dask worker ran a first task within {timeout:.0f}s: does the cluster have workers, "
                "and do they have jupyter_dist installed?"
            ) from None
        except ModuleNotFoundError as exc:
            raise TrialFunctionError(
                f"the Dask workers cannot import {exc.name!r}: install it there"
            ) from None
        if problem:
            raise TrialFunctionError(problem)

    def run(self, source: TrialSource, sink: TrialSink, idle: Callable[[], None] = lambda: None) -> None:
        """Run the source's trials until it has no more, the stop is requested, or a callback raises."""
        # Outcomes arrive on the event stream (fast path); a finished future whose outcome event has not come
        # within OUTCOME_GRACE is gathered instead. Errored or cancelled futures mean the trial was lost.
        events: queue.SimpleQueue = queue.SimpleQueue()
        running: dict[int, Any] = {}  # trial id -> future
        unreported: dict[int, float] = {}  # trial id -> when its future finished without an outcome event
        stop_deadline = None
        last_idle = 0.0
        interrupts = 0
        recent: list[float] = []  # durations of the last few trials, to spot short ones
        # Workers that just finished a trial. The outcome event reaches us before the scheduler has marked the
        # task done, so a plain submit could land behind a long trial on the other worker: name the free one.
        freed: list[str] = []

        def submit(trial_id: int, params: dict) -> None:
            sink.trial_started(trial_id, params)
            hint = {"workers": [freed.pop()], "allow_other_workers": True} if freed else {}
            future = self.client.submit(
                run_trial,
                self.exp_id,
                self._fn_blob,
                params,
                self.exp_id,
                trial_id,
                self.topic,
                key=f"jupyter_dist-{self.exp_id}-trial-{trial_id}",
                pure=False,
                **hint,
            )
            running[trial_id] = future
            future.add_done_callback(lambda f, t=trial_id: events.put(("future", t, f)))

        def finish(trial_id: int, outcome: dict) -> None:
            running.pop(trial_id)
            unreported.pop(trial_id, None)
            if outcome["worker"] is not None:
                freed.append(outcome["worker"])
            if outcome["duration"] is not None:
                recent.append(outcome["duration"])
                del recent[:-8]
            if outcome["state"] == "pruned" and self.stopping:
                outcome["state"] = "stopped"
            source.tell(sink.trial_finished(trial_id, outcome))

        def handle(item: tuple) -> None:
            kind, trial_id, payload = item
            future = running.get(trial_id)
            if future is None:
                return  # already finished through the other path
            if kind == "outcome":
                finish(trial_id, payload)
            elif payload is future and future.status == "finished":
                unreported.setdefault(trial_id, time.monotonic())
            elif payload is future and future.status == "error":
                exc = future.exception()
                text = "".join(traceback.format_exception(type(exc), exc, future.traceback()))
                finish(trial_id, _lost_outcome("failed", f"the trial's task failed on Dask:\n{text}"))
            elif payload is future and future.status == "cancelled":
                finish(trial_id, _lost_outcome("stopped", None))

        def on_outcome(trial_id: int, outcome: dict) -> None:
            events.put(("outcome", trial_id, outcome))

        with EventChannel(self.client, self.topic, sink.report, sink.log, on_outcome):
            try:
                while True:
                    try:
                        short = len(recent) >= 4 and sorted(recent)[len(recent) // 2] < SHORT_TRIAL
                        capacity = self.parallel * (4 if short else 1)
                        while not self.stopping and len(running) < capacity:
                            planned = source.next_trial()
                            if planned is None:
                                break
                            submit(*planned)
                        if not running:
                            break
                        now = time.monotonic()
                        if now - last_idle >= self.idle_interval:
                            last_idle = now
                            idle()
                        if self.stopping and stop_deadline is None:
                            stop_deadline = now + self.stop_grace
                        if stop_deadline is not None and now > stop_deadline:
                            self._abandon(running, finish, "did not stop within the grace period")
                            break
                        overdue = [t for t, since in unreported.items() if now - since > OUTCOME_GRACE]
                        if overdue:
                            for trial_id, outcome in zip(
                                overdue, self.client.gather([running[t] for t in overdue]), strict=True
                            ):
                                finish(trial_id, outcome)
                        try:
                            handle(events.get(timeout=self.poll_interval))
                        except queue.Empty:
                            continue
                        while not events.empty():
                            handle(events.get_nowait())
                    except KeyboardInterrupt:
                        interrupts += 1
                        self.request_stop()
                        if interrupts > 1:  # a second Ctrl-C: do not wait for the running trials
                            self._abandon(running, finish, "interrupted")
                            break
            except BaseException:
                self.request_stop()
                for future in running.values():
                    future.cancel()
                raise
            finally:
                forget_on_workers(self.client, self.exp_id)
                idle()

    def _abandon(self, running: dict, finish: Callable, why: str) -> None:
        for trial_id, future in list(running.items()):
            future.cancel()
            finish(trial_id, _lost_outcome("stopped", f"stopped: {why}"))
