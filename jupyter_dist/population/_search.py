"""Population-based training as a trial source (Jaderberg et al. 2017; Ray Tune's PopulationBasedTraining).

A population of members trains; each member runs in *segments*, one trial each, of ``perturbation_interval``
steps: a segment ends, completed, at its first checkpoint of its last step (trials/_trial_context.py
SegmentDone). As each segment ends, the member's next one is decided there and then, without waiting for the
rest of the population:

- *exploit*: a member in the bottom ``quantile`` (by its newest value of the objective) goes on from the newest
  checkpoint of a member in the top ``quantile``, copied into its own next segment's directory at that moment,
  so that neither that member's later saves nor its retention can change or remove it;
- *explore*: it goes on with that member's hyperparameters, perturbed (_explore.py);
- otherwise it goes on from its own newest checkpoint with its own hyperparameters.

A member whose segments always get a free worker at once runs segment after segment; with fewer workers than
members the one furthest behind goes next, so the population stays level. Every decision is in the segment's
labels (``member``, ``donor``, ``from_trial``, ``from_step``): the schedule and the lineage are read from the
record, never kept beside it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from ..checkpoints import Saved, copy_checkpoint, latest, remove
from ..protocol import CheckpointPlan, Objective, Outcome, TrialState, derive_seed
from ..space import Space
from ..trials import TrialSpec
from ._explore import Explorer

__all__ = ["COPY_ATTEMPTS", "Member", "PopulationSearch", "segment_end"]

# A donor's newest checkpoint may be removed by its own retention while it is copied (it saved `keep` more
# meanwhile): the copy is tried again with the then newest, this many times in all.
COPY_ATTEMPTS = 5


def segment_end(after: int, interval: int, max_steps: int) -> int:
    """The last step of a segment that goes on after step ``after`` (-1: from the start): the next multiple of
    ``interval`` steps, counted from step 0, capped at the member's last step."""
    return min(max_steps - 1, ((after + 1) // interval + 1) * interval - 1)


@dataclass
class Member:
    """One member of the population, as the source follows it."""

    index: int
    params: dict[str, Any]
    directory_trial: int | None = None  # the trial whose checkpoint directory its segments write now
    step: int = -1  # the step of its newest checkpoint
    score: float | None = None  # its newest value of the objective
    waiting: TrialSpec | None = None  # its next segment, decided
    running: int | None = None  # the trial of its segment in flight
    left_behind: int | None = None  # the directory (by trial) of the branch it left when it copied another
    done: bool = False
    segments: list[int] = field(default_factory=list)


class PopulationSearch:
    """The trial source of a PBT experiment (see the module's docstring)."""

    prunes = False  # decisions are made as segments end: no report needs to reach it
    total = None  # how many segments is not known in advance

    def __init__(
        self,
        space: dict[str, Any],
        *,
        population: int,
        objective: Objective,
        perturbation_interval: int,
        quantile: float,
        max_steps: int,
        explorer: Explorer,
        seed: int | None = None,
    ) -> None:
        self.objective = objective
        self.interval = perturbation_interval
        self.quantile = quantile
        self.max_steps = max_steps
        self.explorer = explorer
        self.rng = random.Random(None if seed is None else seed + 1)
        self.seed = seed
        self.checkpoints: CheckpointPlan | None = None
        constants = {name: value for name, value in space.items() if name not in explorer.mutations}
        self.members: list[Member] = []
        self._until: dict[int, int] = {}  # each segment's last step, by its trial id
        for index in range(population):
            params = dict(constants)
            for name in explorer.mutations:
                start = space[name]  # a space object is sampled; a constant is where the member starts
                params[name] = explorer.sample(start) if isinstance(start, Space) else start
            member = Member(index, params)
            member.waiting = self._segment(index, member, params, _labels(index, index, None, None))
            self.members.append(member)
        self._next_id = population
        self._member_of: dict[int, Member] = {}
        self._stored: list | None = None  # a resumed population's records, until use_checkpoints()

    def use_checkpoints(self, plan: CheckpointPlan) -> None:
        """Where the run's trials keep their checkpoints (known once the run has its id); a resumed population's
        members are placed then, at their newest checkpoints."""
        self.checkpoints = plan
        if self._stored is not None:
            self._resume_members(self._stored)
            self._stored = None

    def resume(self, records: list) -> None:
        """Go on with a stored population (the records of its segments): each member from its newest checkpoint
        with its newest segment's hyperparameters; a member that failed or trained its budget stays done. (Once
        the run says where the checkpoints are: ``use_checkpoints``.)"""
        self._stored = list(records)

    def _resume_members(self, records: list) -> None:
        stored: dict[int, list] = {}
        for rec in sorted(records, key=lambda r: r.trial_id):
            stored.setdefault(int(rec.labels["member"]), []).append(rec)
        self._next_id = 1 + max((rec.trial_id for rec in records), default=len(self.members) - 1)
        self._until.clear()
        for member in self.members:
            segments = stored.get(member.index)
            if not segments:
                assert member.waiting is not None  # a member that never ran waits for its first segment
                member.waiting = self._segment(self._new_id(), member, member.params, member.waiting.labels)
                continue
            last = segments[-1]
            member.params, member.segments = dict(last.params), [s.trial_id for s in segments]
            for rec in segments:  # an exploit began a directory of its own; going on kept the one before
                if rec.labels.get("from_trial") is None or rec.labels.get("donor") != member.index:
                    member.directory_trial = rec.trial_id
            scores = [s.value for s in segments if s.state is TrialState.COMPLETED and s.value is not None]
            member.score = scores[-1] if scores else None
            saved = self._newest(member)
            member.step = -1 if saved is None else saved.step
            member.waiting = None
            if last.state is TrialState.FAILED or member.step >= self.max_steps - 1:
                member.done = True
            elif saved is None:  # it never checkpointed: it starts again
                member.directory_trial = None
                labels = _labels(member.index, member.index, None, None)
                member.waiting = self._segment(self._new_id(), member, member.params, labels)
            else:
                member.waiting = self._go_on(member, saved)

    # --- the trial source ------------------------------------------------------------------------------------
    def next_trial(self) -> TrialSpec | None:
        ready = [m for m in self.members if m.waiting is not None]
        if not ready:
            return None
        member = min(ready, key=lambda m: (m.step, m.index))  # the one furthest behind goes first
        spec, member.waiting = member.waiting, None
        assert spec is not None  # it is ready
        member.running = spec.trial_id
        member.segments.append(spec.trial_id)
        if spec.continues is None:
            member.directory_trial = spec.trial_id
        self._member_of[spec.trial_id] = member
        return spec

    def remaining(self) -> int | None:
        return sum(m.waiting is not None for m in self.members)

    def report(self, trial_id: int, rows: list) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        member = self._member_of.pop(outcome.trial_id, None)
        if member is None:
            return
        member.running = None
        if outcome.value is not None and math.isfinite(outcome.value):
            member.score = outcome.value
        saved = self._newest(member)
        if saved is not None:
            member.step = saved.step
        if member.left_behind is not None and outcome.state is TrialState.COMPLETED:
            assert self.checkpoints is not None  # a member leaves a directory behind only with checkpoints
            remove(self.checkpoints.trial_directory(member.left_behind))
            member.left_behind = None
        if outcome.state is not TrialState.COMPLETED:
            member.done = True  # failed (after its retries), or stopped with the experiment
            return
        until = self._until.pop(outcome.trial_id)
        if saved is None or saved.step < until or saved.step >= self.max_steps - 1:
            # It returned before its segment's end (its own loop ended), or it has trained its budget.
            member.done = True
            return
        member.waiting = self._exploit(member) or self._go_on(member, saved)

    # --- deciding ---------------------------------------------------------------------------------------------
    def _exploit(self, member: Member) -> TrialSpec | None:
        """The member's next segment from a top member's checkpoint, if it is in the bottom quantile and a top
        member has checkpointed."""
        lower, upper = self._quantiles()
        if member not in lower:
            return None
        donors = [d for d in upper if d is not member]
        self.rng.shuffle(donors)
        assert self.checkpoints is not None  # PBT runs with checkpoints (use_checkpoints came first)
        for donor in donors:
            params = self.explorer.explore(donor.params)
            changed = {k: v for k, v in params.items() if donor.params.get(k) != v}
            copied = self._copy_newest(donor, self.checkpoints.trial_directory(self._next_id), changed)
            if copied is None:
                continue  # it has not checkpointed yet (a member never restarts from zero), or it has finished
            trial_id = self._new_id()
            # Its own branch is left behind, and removed (to keep the population's disk use bounded) once the
            # new one has a segment of its own recorded: a run interrupted before that still finds it.
            member.left_behind = member.directory_trial
            member.params, member.step, member.directory_trial = params, copied.step, trial_id
            return self._segment(
                trial_id, member, params, _labels(member.index, donor.index, donor.segments[-1], copied.step)
            )
        return None

    def _go_on(self, member: Member, saved: Saved) -> TrialSpec:
        return self._segment(
            self._new_id(),
            member,
            member.params,
            _labels(member.index, member.index, member.segments[-1], saved.step),
            continues=member.directory_trial,
        )

    def _segment(
        self,
        trial_id: int,
        member: Member,
        params: dict[str, Any],
        labels: dict[str, Any],
        continues: int | None = None,
    ) -> TrialSpec:
        until = segment_end(member.step, self.interval, self.max_steps)
        self._until[trial_id] = until
        # Seeded by the member and the segment's last step, not the trial id: which segment gets which id depends
        # on the order segments happen to end in.
        seed = None if self.seed is None else derive_seed(self.seed, member.index, until)
        return TrialSpec(
            trial_id, dict(params), labels=labels, continues=continues, until_step=until, seed=seed
        )

    def _quantiles(self) -> tuple[list[Member], list[Member]]:
        """The bottom and the top ``quantile`` of the members that have a value (at least one member each, and
        never more than half of them)."""
        scored = [m for m in self.members if m.score is not None]
        if len(scored) < 2:
            return [], []
        count = max(1, math.ceil(len(scored) * self.quantile))
        count = min(count, len(scored) // 2)
        better = self.objective.direction.better
        # best first (each of them has a score)
        ranked = sorted(scored, key=lambda m: m.score, reverse=better(1.0, 0.0))  # type: ignore[arg-type,return-value]
        return ranked[-count:], ranked[:count]

    def _newest(self, member: Member) -> Saved | None:
        if self.checkpoints is None or member.directory_trial is None:
            return None
        return latest(self.checkpoints.trial_directory(member.directory_trial))

    def _copy_newest(self, donor: Member, directory: str, changed: dict[str, Any]) -> Saved | None:
        for _ in range(COPY_ATTEMPTS):
            saved = self._newest(donor)
            if saved is None or saved.step >= self.max_steps - 1:
                return None  # nothing to copy yet; or its last step, which would leave nothing to train
            try:
                return copy_checkpoint(saved, directory, changed)
            except FileNotFoundError:
                continue  # removed by the donor's retention while it was copied: its newest now
        return None

    def _new_id(self) -> int:
        trial_id, self._next_id = self._next_id, self._next_id + 1
        return trial_id


def _labels(member: int, donor: int, from_trial: int | None, from_step: int | None) -> dict[str, Any]:
    return {"member": member, "donor": donor, "from_trial": from_trial, "from_step": from_step}
