"""What travels between the kernel and a trial's task besides the event stream's messages: ``TrialTask`` (kernel
-> worker: the function, the parameters, where to report, its rank, GPUs and checkpoints; ``RankInfo``,
``CheckpointPlan``), ``Outcome`` (how one attempt, or one rank of it, ended: built on the worker, decoded in the
kernel), and ``Regrouped`` (an elastic job started again at another size)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from ._states import ErrorKind, TrialState

__all__ = ["CheckpointPlan", "Outcome", "RankInfo", "Regrouped", "TrialTask"]


@dataclass
class Outcome:
    """How one trial attempt ended (for a data-parallel trial: one rank's, then the merged one)."""

    trial_id: int
    attempt: str | None
    state: TrialState
    returned: float | dict[str, float] | None = None
    last: dict[str, float] = field(default_factory=dict)  # the last reported value of each metric
    steps: int | None = None
    started: float | None = None
    duration: float | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    worker: str | None = None
    stopped_at: float | None = None  # when report() raised TrialPruned: the stop latency's far end
    failed_at: float | None = None  # when the function raised, before any clean-up: which rank failed first
    rank: int = 0
    worker_lost: bool = False
    value: float | None = None  # the objective's value, decided in the kernel by Objective.judge
    result: Any = None  # a data-parallel rank's whole return value (task result only, never on the wire)
    rank_results: list | None = None  # every rank's, in rank order, once merged
    constraints: list[float] | None = None  # hpo(constraints=): evaluated in the kernel as it completed
    # An elastic data-parallel rank that ended at a checkpoint because the kernel asked the job to regroup (more
    # workers came): the job goes on from that checkpoint at its new size (trials/_elastic.py).
    regroup: bool = False

    @classmethod
    def lost(
        cls, trial_id: int, state: TrialState, error: str | None, kind: ErrorKind | None, rank: int = 0
    ) -> Outcome:
        """The outcome of a trial whose task never gave one (worker lost, cancelled, abandoned)."""
        return cls(trial_id, None, state, error=error, error_kind=kind if error else None, rank=rank)

    def to_wire(self) -> dict:
        wire = {name: getattr(self, name) for name in _WIRE_NAMES}
        wire["state"] = self.state.value
        wire["error_kind"] = self.error_kind.value if self.error_kind else None
        return wire

    @classmethod
    def from_wire(cls, wire: dict) -> Outcome:
        kind = wire.get("error_kind")
        known = {k: v for k, v in wire.items() if k in _WIRE_FIELDS}
        return cls(
            **dict(known, state=TrialState(wire["state"]), error_kind=ErrorKind(kind) if kind else None)
        )


_LOCAL_ONLY = ("result", "rank_results", "value", "constraints")
# In field order, once: dataclasses.fields() at every outcome cost a brief trial ~30 us on its worker.
_WIRE_NAMES = tuple(f.name for f in dataclasses.fields(Outcome) if f.name not in _LOCAL_ONLY)
_WIRE_FIELDS = set(_WIRE_NAMES)


@dataclass
class Regrouped:
    """An elastic data-parallel job (trials/_elastic.py) started again at another size, as the kernel records it: when, why (the ranks
    lost and their workers, or workers free to grow onto), the world size before and after, and the checkpoint it goes on from."""

    trial_id: int
    why: str
    lost: list[int]
    world_before: int
    world_after: int
    from_step: int
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class RankInfo:
    """What one rank of a data-parallel trial is told: its place in the job and where the job meets."""

    rank: int
    world: int
    host: str  # rank 0's host: the rendezvous
    port: int
    attempt: str  # one attempt id for all ranks: their output belongs to one run of the trial


@dataclass(frozen=True)
class CheckpointPlan:
    """Where an experiment's trials keep their checkpoints: ``directory`` (a local path or an fsspec URL every
    worker can reach) holds ``trial-<n>/step-<step>/``; the newest ``keep`` of each trial's are kept."""

    directory: str
    keep: int

    def trial_directory(self, trial_id: int) -> str:
        return f"{self.directory.rstrip('/')}/trial-{trial_id}"


@dataclass(frozen=True)
class TrialTask:
    """What one trial task runs (one attempt of a trial, or one rank of it), as the kernel sends it to a worker."""

    function: tuple[str, str]  # how workers keep the function, unpickled: (experiment id, hash of its pickle)
    # The function, pickled once per run: cheap to send with every task; above jupyter_dist.scatter-threshold the
    # key those bytes were scattered under, which each worker fetches once (trials/_by_reference.py).
    pickled: bytes | str
    exp_id: str
    trial_id: int
    params: dict[str, Any]
    topic: str  # the Dask event topic its reports, output and outcome go to
    rank: RankInfo | None  # one rank of a data-parallel trial; None: a single-task trial
    gpus: float  # how many of the worker's declared GPUs it holds while it runs (jupyter_dist.devices())
    # Where its jupyter_dist.checkpoint() saves (keep_checkpoints of them); None: nowhere.
    checkpoint_dir: str | None
    keep_checkpoints: int | None
    report_wait: float  # how long a report may wait for others to travel with (trials/_trial_context.py)
    cpus: int | None = None  # torch's intra-op threads while it runs (cpus_per_trial=); None: the worker's
    # A population-based-training member's segment: it ends (completed) once it has checkpointed this step or a
    # later one, and the population decides where the member goes on from (population/_search.py).
    until_step: int | None = None
    # One rank of an elastic data-parallel job: at each checkpoint its ranks agree whether to end there and regroup
    # at another size (trials/_elastic.py).
    elastic: bool = False
    # The trial's seed (protocol/_seeds.py): Python's random, NumPy's global generator and torch are seeded with it
    # (a rank's: derived from it and the rank) before the function runs; None: nothing is seeded.
    seed: int | None = None
