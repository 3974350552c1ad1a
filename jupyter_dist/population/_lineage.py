"""A population's segments read as members and lineages (labels ``member``, ``donor``, ``from_trial``,
``from_step``: population/_search.py), shared by ``PopulationExperiment`` and its plots."""

from __future__ import annotations

from ..store import TrialRecord

__all__ = ["first_step", "is_exploit", "lineage_origins", "member_segments"]


def member_segments(records: list[TrialRecord]) -> dict[int, list[TrialRecord]]:
    """Each member's segments, in the order they ran."""
    members: dict[int, list[TrialRecord]] = {}
    for rec in sorted(records, key=lambda r: r.trial_id):
        if "member" in rec.labels:
            members.setdefault(int(rec.labels["member"]), []).append(rec)
    return members


def lineage_origins(records: list[TrialRecord]) -> dict[int, int]:
    """Each segment's origin: the member whose first weights it carries on (a member that copied another carries
    that member's origin from then on). What the curves are coloured by."""
    by_id = {rec.trial_id: rec for rec in records}
    origins: dict[int, int] = {}
    for rec in sorted(records, key=lambda r: r.trial_id):
        parent = rec.labels.get("from_trial")
        if parent is None or parent not in by_id:
            origins[rec.trial_id] = int(rec.labels.get("member", rec.trial_id))
        else:  # the segment it goes on from always ran before it: a smaller trial id
            origins[rec.trial_id] = origins.get(parent, int(by_id[parent].labels.get("member", parent)))
    return origins


def is_exploit(rec: TrialRecord) -> bool:
    return rec.labels.get("donor") is not None and rec.labels.get("donor") != rec.labels.get("member")


def first_step(rec: TrialRecord) -> int:
    from_step = rec.labels.get("from_step")
    return 0 if from_step is None else int(from_step) + 1
