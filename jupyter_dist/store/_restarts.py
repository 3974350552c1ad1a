"""An elastic data-parallel trial's regroups (trials/_elastic.py), as its record keeps them: one ``Restart`` row
each, said the same way by every view."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol import Regrouped
    from ._wire import Restart


def restart_row(event: Regrouped, lost_at: int | None) -> Restart:
    """The row for a regroup the kernel decided on; ``lost_at``: the newest step it had heard of then."""
    row: Restart = {
        "at": event.at,
        "why": event.why,
        "lost": list(event.lost),
        "world_before": event.world_before,
        "world_after": event.world_after,
        "lost_at": lost_at,
        "from_step": event.from_step,
        "steps_redone": 0,
        "message": "",
    }
    _say(row)
    return row


def went_on_from(row: Restart, step: int) -> bool:
    """Correct ``row`` to the checkpoint the new group's ``restore()`` found, where it is not the one the kernel
    named: a rank 0 cut off from the cluster may have saved a newer checkpoint to the shared folder whose news went
    down with its link. That checkpoint shows the job got as far as its step. Whether the row changed."""
    if row["from_step"] == step:
        return False
    row["from_step"] = step
    if row["lost_at"] is not None and row["lost_at"] < step:
        row["lost_at"] = step
    _say(row)
    return True


def _say(row: Restart) -> None:
    lost_at, world = row["lost_at"], row["world_after"]
    row["steps_redone"] = max(0, lost_at - row["from_step"]) if lost_at is not None else 0
    where = f" at step {lost_at}" if lost_at is not None and row["lost"] else ""
    row["message"] = (
        f"{row['why']}{where}: continuing on {world} rank{'s' * (world != 1)} from step {row['from_step']}"
    )
