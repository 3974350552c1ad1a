"""The trial a worker thread is running: its reports and output on their way to the kernel, its stop flag.

``report()`` (jupyter_dist/_report.py) finds the calling thread's trial here. Messages are built with the
protocol's encoders only (jupyter_dist/protocol.py); stop flags are set from the kernel with ``Client.run``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch.distributed

from ..errors import ArgumentError, TrialPruned
from ..protocol import RankInfo, encode_checkpoint, encode_log
from ._outbox import FRESH, LOG_WAIT, OUTCOME_WAIT, forget_outboxes, outbox_for

__all__ = [
    "Regroup",
    "Reporter",
    "SegmentDone",
    "TrialContext",
    "activate",
    "current_trial",
    "forget_experiment",
    "forget_trial",
    "mark_regroup",
    "mark_stopped",
]


class SegmentDone(TrialPruned):
    """A population-based-training member's segment has checkpointed its last step: the trial ends there,
    completed, and the population decides where the member goes on from (its own checkpoint, or a better member's).

    A TrialPruned, so that a training loop which lets the stop through (or catches it to return) ends the segment
    the same way.
    """


class Regroup(SegmentDone):
    """An elastic data-parallel job's ranks end together at a checkpoint because workers joined: the kernel starts
    the job again from that checkpoint with more ranks (trials/_elastic.py)."""


# Stop flags of this worker process, set from the kernel with ``Client.run`` (a few ms) and read by report().
# (experiment id, trial id), or with an attempt id: only that attempt (a data-parallel trial's group of ranks).
_stopped_trials: set[tuple] = set()
_stopped_experiments: set[str] = set()


# Elastic jobs (experiment id, trial id) asked to regroup at their next checkpoint: set on rank 0's worker, which
# decides for every rank (TrialContext.checkpointed).
_regroup_asked: set[tuple[str, int]] = set()


def mark_regroup(exp_id: str, trial_id: int) -> None:
    _regroup_asked.add((exp_id, trial_id))


def mark_stopped(exp_id: str, trial_ids: list[int] | None = None, attempt: str | None = None) -> None:
    """Flag trials (or, with no ids, the whole experiment) as stopped in this process; with ``attempt``, only that
    attempt of them: a stop meant for an elastic job's last group of ranks can arrive after its next group began."""
    if trial_ids is None:
        _stopped_experiments.add(exp_id)
    else:
        _stopped_trials.update((exp_id, t) if attempt is None else (exp_id, t, attempt) for t in trial_ids)


def forget_trial(exp_id: str, trial_id: int) -> None:
    """Drop one trial's flags from this process: an elastic job starting again after a stop sent to its last group
    of ranks (or a regroup asked of it) must not find them."""
    _stopped_trials.difference_update({key for key in _stopped_trials if key[:2] == (exp_id, trial_id)})
    _regroup_asked.discard((exp_id, trial_id))


def forget_experiment(exp_id: str) -> None:
    """Drop an ended experiment's stop flags and outbox from this process."""
    _stopped_experiments.discard(exp_id)
    _stopped_trials.difference_update({key for key in _stopped_trials if key[0] == exp_id})
    _regroup_asked.difference_update({key for key in _regroup_asked if key[0] == exp_id})
    forget_outboxes(exp_id)


def _as_number(name: str, value: Any) -> float:
    # numpy and torch scalars are not msgpack types; float() accepts them and rejects anything else. A loss that
    # still tracks its gradient is read detached: float() of it warns into the trial's output at every report.
    detach = getattr(value, "detach", None)
    try:
        return float(value if detach is None else detach())
    except (TypeError, ValueError):
        raise ArgumentError(
            f"report(): metric {name!r} must be a number, got {type(value).__name__} {value!r}"
        ) from None


class TrialContext:
    """One attempt of one trial, as the worker runs it: streams reports and captured output to the kernel, through
    its experiment's outbox in this process (trials/_outbox.py), with every other trial's of the experiment."""

    def __init__(
        self,
        exp_id: str,
        trial_id: int,
        attempt: str,
        topic: str,
        emit,
        rank: RankInfo | None = None,
        max_wait: float = FRESH,
    ) -> None:
        self.exp_id = exp_id
        self.trial_id = trial_id
        self.attempt = attempt
        self.topic = topic
        self.rank_info = rank  # a data-parallel trial runs one task per rank
        self.rank = rank.rank if rank else 0
        self.world_size = rank.world if rank else 1
        self.devices: list[int] = []  # the worker's GPU indices this trial holds (gpus_per_trial=)
        self.checkpoint_dir: str | None = None  # where jupyter_dist.checkpoint() saves; None: it does not
        self.keep_checkpoints: int | None = None
        self.until_step: int | None = None  # a PBT segment's last step (TrialTask.until_step)
        self.elastic = False  # an elastic data-parallel rank (TrialTask.elastic)
        # The job's rendezvous store (torch's TCPStore), where an elastic job's ranks agree to regroup.
        self.rendezvous: torch.distributed.Store | None = None
        self._checkpoints_made = 0
        # emit is worker.log_event, bound once: get_worker() per report would cost more.
        self._outbox = outbox_for(exp_id, topic, emit)
        self.max_wait = max_wait  # how long a report may wait for others to travel with (FRESH or RELAXED)
        self.steps = 0
        self.last: dict[str, float] = {}
        # When the function raised, before any clean-up ran: tells which rank of a job failed first.
        self.failed_at: float | None = None
        # [step, metrics, time] per report not sent yet, oldest first (the outbox takes them).
        self.batch: list[list] = []

    @property
    def should_stop(self) -> bool:
        return (
            self.exp_id in _stopped_experiments
            or (self.exp_id, self.trial_id) in _stopped_trials
            or (self.exp_id, self.trial_id, self.attempt) in _stopped_trials
        )

    def report(self, step: int | None, metrics: dict[str, Any]) -> None:
        if not metrics:
            raise ArgumentError("report() needs at least one metric, e.g. report(step=3, loss=0.2)")
        values = {name: _as_number(name, value) for name, value in metrics.items()}
        step = self.steps if step is None else int(step)
        self.steps += 1
        self.last.update(values)
        if self.rank:  # rank 0 speaks for a data-parallel trial; the others only hear the stop
            if self.should_stop:
                raise TrialPruned(f"trial {self.trial_id} was stopped")
            return
        outbox = self._outbox
        with outbox.lock:
            self.batch.append([step, values, time.time()])
            outbox.reported(self, self.max_wait)
            full = outbox.full(self)
        if full:
            outbox.hold_back()
            outbox.flush()
        if self.should_stop:
            raise TrialPruned(f"trial {self.trial_id} was stopped")

    def flush(self) -> None:
        """Send what waits in this trial's outbox now (its reports, and every other trial's of the experiment)."""
        self._outbox.flush()

    def checkpointed(self, step: int, path: str, resumed: bool) -> None:
        """Tell the kernel the checkpoint of ``step`` at ``path`` was saved, or (``resumed``) that this attempt
        goes on from it: then its reports, when they give no step, are numbered on from there."""
        if resumed:
            self.steps = step + 1
        if not self.rank:
            self.send(encode_checkpoint(self.trial_id, self.attempt, step, path, resumed), OUTCOME_WAIT)
        if not resumed and self.until_step is not None and step >= self.until_step:
            # Every rank gets here after the same checkpoint's last barrier: they end the segment together.
            raise SegmentDone(f"trial {self.trial_id} checkpointed step {step}, its segment's last")
        if (
            not resumed
            and self.elastic
            and self.rendezvous is not None
            and self._regroup_agreed(self.rendezvous)
        ):
            raise Regroup(f"trial {self.trial_id} regroups after its checkpoint of step {step}")

    def _regroup_agreed(self, store: torch.distributed.Store) -> bool:
        """Whether the job ends at this checkpoint to regroup. Rank 0 decides and tells the others through the
        rendezvous store (a key per checkpoint, which they wait for): a flag read by each rank on its own could
        reach them at different checkpoints, and a rank leaving alone would stall its peers' next collective."""
        key = f"jupyter_dist/regroup/{self._checkpoints_made}"
        self._checkpoints_made += 1
        if self.rank == 0:
            asked = (self.exp_id, self.trial_id) in _regroup_asked
            _regroup_asked.discard((self.exp_id, self.trial_id))
            store.set(key, b"1" if asked else b"0")  # type: ignore[arg-type]  # torch's stub says str; bytes go
        return store.get(key) == b"1"

    def send_log(self, stream: str, text: str) -> None:
        """Send captured output, after every report made before it."""
        self.send(encode_log(self.trial_id, self.attempt, stream, text), LOG_WAIT)

    def send(self, msg: Mapping[str, Any], wait: float = OUTCOME_WAIT) -> None:
        """Send one encoded message (an output line, the outcome) within ``wait``, after every report made before
        it (in the same event as those not sent yet)."""
        with self._outbox.lock:
            self._outbox.add(self, msg, wait)


_thread = threading.local()
_active: dict[int, TrialContext] = {}


def activate(ctx: TrialContext | None) -> None:
    """Make ``ctx`` the trial of the calling thread (None: no trial)."""
    ident = threading.get_ident()
    _thread.ctx = ctx
    if ctx is None:
        _active.pop(ident, None)
    else:
        _active[ident] = ctx


def current_trial() -> TrialContext | None:
    """The trial running on this thread; from a helper thread, the process's only running trial."""
    ctx = getattr(_thread, "ctx", None)
    if ctx is None and len(_active) == 1:
        ctx = next(iter(_active.values()), None)
    return ctx


class Reporter:
    """Injected into a training function that declares a ``reporter`` parameter (Maggy's style).

    Created directly (``Reporter()``) outside an experiment it reports nowhere and never asks to stop.
    """

    def __init__(self, ctx: TrialContext | None = None) -> None:
        self._ctx = ctx

    def report(self, step: int | None = None, **metrics: Any) -> None:
        """Report metrics of the trial, as ``jupyter_dist.report()`` does (raising ``TrialPruned`` once it
        should stop)."""
        if self._ctx is not None:
            self._ctx.report(step, metrics)

    @property
    def should_stop(self) -> bool:
        """True once the trial has been pruned or its experiment stopped (never outside an experiment)."""
        return self._ctx is not None and self._ctx.should_stop
