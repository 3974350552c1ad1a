"""Elastic data-parallel jobs: a job that loses a rank's worker goes on from its newest checkpoint with the ranks it
can still have, and one that finds workers free grows at its next checkpoint.

torchrun's elastic agent and Horovod Elastic restart a job's worker processes in place. Here a job's ranks are Dask
tasks, so regrouping is the launcher's (trials/_gang_jobs.py): once every rank of the job has ended it places a new
job, of the size the free workers allow (``min_ranks`` to ``max_ranks``), under the same trial; the training
function runs again on every rank and ``restore()`` brings back its newest checkpoint (and the prepared
DataLoader's place in its epoch, ddp/_loader.py). Growing waits for a checkpoint, so that no step is redone: the
kernel asks rank 0's worker, rank 0 tells its peers at their next checkpoint through the rendezvous store
(TrialContext.checkpointed), and they all end there together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import ArgumentError
from ..protocol import ErrorKind, Outcome
from ._trial_context import mark_regroup

# A job that regroups this many times in a row without saving a new checkpoint ends: something other than the
# cluster's size keeps failing it (a rank that runs out of memory at once, every time).
FRUITLESS_REGROUPS = 3
# How long an elastic job waits below min_ranks by default before it ends (Horovod's elastic timeout is 600 s; a
# notebook user should hear sooner).
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Elastic:
    """How many ranks a data-parallel job may run on: it starts with the ranks asked for (fewer, down to
    ``min_ranks``, when the cluster has fewer), goes on with as few as ``min_ranks`` after losing workers, grows up
    to ``max_ranks`` as workers come, and ends once it has had fewer than ``min_ranks`` for ``timeout`` seconds."""

    min_ranks: int
    max_ranks: int
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def of(
        cls, ranks: int, min_ranks: int | None, max_ranks: int | None, timeout: float | None, *, names: tuple
    ) -> Elastic | None:
        """The policy for ``ranks`` asked for, or None (not elastic) when neither bound is given; ``names``: the
        arguments as the user calls them (e.g. ("workers", "min_workers", "max_workers", "elastic_timeout"))."""
        if min_ranks is None and max_ranks is None:
            if timeout is not None:
                raise ArgumentError(
                    f"{names[3]}={timeout!r} is for elastic jobs: give {names[1]}= and/or {names[2]}= too"
                )
            return None
        low = ranks if min_ranks is None else min_ranks
        high = ranks if max_ranks is None else max_ranks
        for name, value in ((names[1], low), (names[2], high)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"{name}={value!r}: give a whole number of workers >= 1")
        if not low <= ranks <= high:
            raise ArgumentError(
                f"{names[1]}={low}, {names[0]}={ranks}, {names[2]}={high}: an elastic job needs "
                f"{names[1]} <= {names[0]} <= {names[2]}"
            )
        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise ArgumentError(f"{names[3]}={timeout!r}: give the seconds to wait for workers, > 0")
        return cls(low, high, DEFAULT_TIMEOUT if timeout is None else float(timeout))

    def to_details(self) -> dict:
        return {"min_workers": self.min_ranks, "max_workers": self.max_ranks, "elastic_timeout": self.timeout}


@dataclass
class Waiting:
    """A job between two groups: its ranks have all ended, the next group is not placed yet."""

    why: str
    lost: list[int]
    world_before: int
    from_step: int
    ended: Outcome  # how it ended, should it never go on
    since: float = field(default_factory=time.monotonic)


def why_lost(lost: dict[int, str]) -> str:
    """``lost``: rank -> its worker's address."""
    ranks = sorted(lost)
    named = ", ".join(f"rank {r} (worker {lost[r]})" for r in ranks)
    return f"{named} lost" if len(ranks) == 1 else f"ranks {named} lost"


def how_to_go_on(outcome: Outcome, elastic: Elastic | None, checkpointed: bool) -> Outcome:
    """A job that lost a worker and cannot go on without it: its error says what would have let it."""
    if elastic is not None and checkpointed:
        return outcome
    missing = []
    if elastic is None:
        missing.append("data_parallel(..., min_workers=N) (workers_per_trial jobs: min_workers_per_trial=N)")
    if not checkpointed:
        missing.append(
            "a jupyter_dist.checkpoint(step, state) every few steps and jupyter_dist.restore(state) before the "
            "loop"
        )
    hint = (
        "\n\nTo have a data-parallel job go on when it loses a worker (restarting from its newest checkpoint on "
        f"the workers it still has), give it {' and '.join(missing)}."
    )
    outcome.error = (outcome.error or "") + hint
    return outcome


def below_minimum(waiting: Waiting, elastic: Elastic, free: int) -> Outcome:
    """How a job that waited too long for workers ends: failed, saying why and where to resume from."""
    ended = waiting.ended
    ended.error = (
        f"{waiting.why}; the job had fewer than min_workers={elastic.min_ranks} free workers for "
        f"{elastic.timeout:g} s ({free} free), so it ended. Its newest checkpoint is step {waiting.from_step}: run "
        f"it again with resume=True once the cluster has the workers.\n\n{ended.error or ''}".rstrip()
    )
    ended.error_kind = ErrorKind.LOST
    return ended


# Client.run(wait=False) takes only coroutine functions; this runs on rank 0's worker's event loop.
async def _mark_regroup(exp_id: str, trial_id: int) -> None:
    mark_regroup(exp_id, trial_id)


def ask_to_regroup(client, worker: str, exp_id: str, trial_id: int) -> None:
    """Have the job end at its next checkpoint, to start again with more ranks (rank 0 decides for all)."""
    client.run(_mark_regroup, exp_id, trial_id, workers=[worker], wait=False)
