"""A population-based-training experiment's results: its members, their hyperparameter schedules, the lineage of
their weights, the best member's final checkpoint.

Everything is read from the segments' records (one trial per segment; labels ``member``, ``donor``,
``from_trial``, ``from_step``: population/_search.py), so a live run and one loaded from the store read the same.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ArgumentError, NoResultError
from ..experiment import Best, Experiment
from ..protocol import TrialState
from ..store import TrialRecord
from ._lineage import first_step, is_exploit, lineage_origins, member_segments
from ._search import segment_end

__all__ = ["PopulationExperiment"]


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


class PopulationExperiment(Experiment):
    """What ``jupyter_dist.pbt()`` returns: an Experiment whose trials are the members' segments, with
    ``members``, ``schedule``, ``lineage`` and the best member (``best``, ``checkpoint()``)."""

    def __init__(self, record, stop=None) -> None:
        super().__init__(record, stop)
        self._origins: tuple[int, dict[int, int]] = (-1, {})  # (segments read, each one's origin)

    def _reproduction(self, rec: TrialRecord) -> dict[str, Any]:
        """A member's first segment runs again from the start to its first checkpoint of the segment's last step;
        a later one went on from a checkpoint, which reproduce does not restore."""
        if rec.labels.get("from_trial") is not None:
            raise ArgumentError(
                f"trial {rec.trial_id} of {self.name!r} is a segment that went on from trial "
                f"{rec.labels['from_trial']}'s checkpoint of step {rec.labels.get('from_step')}; reproduce runs a "
                f"trial from its beginning: reproduce member {rec.labels.get('member')}'s first segment instead"
            )
        details = self.record.definition.details
        return {
            "until_step": segment_end(-1, int(details["perturbation_interval"]), int(self.max_steps or 0))
        }

    def _extendable(self, rec: TrialRecord) -> None:
        raise ArgumentError(
            f"trial {rec.trial_id} of {self.name!r} is a segment of population member "
            f"{rec.labels.get('member')}; a member trains as long as its population: run pbt() again with "
            f"name={self.name!r}, resume=True and a larger max_steps"
        )

    @property
    def population(self) -> int:
        return int(self.record.definition.details.get("population", 0))

    def _members(self) -> dict[int, list[TrialRecord]]:
        return member_segments(self.trial_records())

    @property
    def members(self):
        """One row per member: member, its newest segment's trial_id and state, value (the objective in its
        newest finished segment), step (the last step it checkpointed), segments, exploits (how many times it
        copied another member), params_<name> (the hyperparameters it trains with now)."""
        import pandas as pd

        rows = []
        for member, segments in sorted(self._members().items()):
            last = segments[-1]
            valued = [s for s in segments if s.value is not None]
            rows.append(
                {
                    "member": member,
                    "trial_id": last.trial_id,
                    "state": last.state.value,
                    "value": valued[-1].value if valued else None,
                    "step": max(
                        (s.checkpoint_step for s in segments if s.checkpoint_step is not None), default=None
                    ),
                    "segments": len(segments),
                    "exploits": sum(is_exploit(s) for s in segments),
                    **{f"params_{k}": v for k, v in last.params.items()},
                }
            )
        return pd.DataFrame(rows)

    @property
    def schedule(self):
        """Each member's hyperparameter schedule: one row per change (its start, and each exploit), a DataFrame of
        member, trial_id (the segment that began with them), step (the first step trained with them), and
        params_<name>."""
        import pandas as pd

        rows = []
        for member, segments in sorted(self._members().items()):
            for rec in segments:
                if rec.labels.get("from_trial") is None or is_exploit(rec):
                    row = {"member": member, "trial_id": rec.trial_id, "step": first_step(rec)}
                    row.update({f"params_{k}": v for k, v in rec.params.items()})
                    rows.append(row)
        return pd.DataFrame(rows, columns=None if rows else ["member", "trial_id", "step"])

    @property
    def lineage(self):
        """Every exploit, a DataFrame of member, trial_id (its segment that went on from the copy), step (the
        first step it trained after it), donor (the member copied), donor_trial (that member's segment whose
        checkpoint was copied), from_step (the checkpoint's step) and restored (the step the segment's
        ``restore()`` actually found: from_step, unless it never restored)."""
        import pandas as pd

        columns = ["member", "trial_id", "step", "donor", "donor_trial", "from_step", "restored"]
        rows = [
            [
                int(rec.labels["member"]),
                rec.trial_id,
                first_step(rec),
                int(rec.labels["donor"]),
                rec.labels.get("from_trial"),
                rec.labels.get("from_step"),
                rec.resumed_from,
            ]
            for rec in sorted(self.trial_records(), key=lambda r: r.trial_id)
            if is_exploit(rec)
        ]
        return pd.DataFrame(rows, columns=columns)

    def _final_segments(self) -> list[TrialRecord]:
        """Each member's newest segment that has a value."""
        finals = []
        for segments in self._members().values():
            valued = [s for s in segments if s.state is TrialState.COMPLETED and _finite(s.value)]
            if valued:
                finals.append(valued[-1])
        return finals

    @property
    def best(self) -> Best:
        """The best member as it is now (at the end: as it finished): its newest completed segment."""
        finals = self._final_segments()
        if not finals:
            raise NoResultError(
                f"experiment {self.name!r} has no completed segment yet (state: {self.state})"
            )
        better = self.record.definition.objective.direction.better
        rec = finals[0]
        for other in finals[1:]:
            assert other.value is not None and rec.value is not None  # final segments have a value
            if better(other.value, rec.value):
                rec = other
        assert rec.value is not None
        return Best(trial_id=rec.trial_id, value=rec.value, params=dict(rec.params))

    def checkpoint(self, trial_id: int | None = None) -> str | None:
        """The folder of a segment's newest checkpoint; by default the best member's final one."""
        return super().checkpoint(self.best.trial_id if trial_id is None else trial_id)

    def _curve_style(self, rec: TrialRecord) -> dict:
        """Coloured by lineage (the member whose first weights the segment carries on), as in ``plot()``."""
        from ._plots import lineage_colour

        records = self.trial_records()
        if self._origins[0] != len(records):  # a new segment since: the lineage read again
            self._origins = (len(records), lineage_origins(records))
        return {"line": {"color": lineage_colour(self._origins[1].get(rec.trial_id, 0)), "width": 1.5}}

    def _live_figure_title(self) -> str | None:
        return "Lineage and schedules"

    def _curves_kept(self, records: list[TrialRecord], limit: int) -> list[TrialRecord]:
        """The newest segments: short pieces of the members' curves, ten times as many as a run's best trials
        (the lab extension draws as many: MAX_SEGMENT_CURVES)."""
        return sorted(records, key=lambda r: r.trial_id)[-10 * limit :]

    def _resume_is_news(self, rec: TrialRecord) -> bool:
        return rec.attempts > 1 or rec.resumed_from != rec.labels.get("from_step")

    def compute(self) -> dict[str, float]:
        """As for any experiment, without the share of steps "saved by pruning": segments end by design."""
        used = super().compute()
        used.pop("saved", None)
        return used

    def _highlight(self) -> str | None:
        try:
            best = self.best
        except NoResultError:
            return None
        member = self.record.trial_without_details(best.trial_id).labels.get("member")
        return f"best {self.metric}={best.value:.4g} (member {member}, trial {best.trial_id})"

    def status_line(self) -> str:
        line = super().status_line()
        # "N/? trials done" says little of a population: its members, segments and exploits instead.
        records = self.trial_records()
        exploits = sum(is_exploit(rec) for rec in records)
        head, _, rest = line.partition(" · ")
        kind_and_state = head.rpartition(": ")[0]
        population = f"{self.population} members, {len(records)} segments, {exploits} exploits"
        return " · ".join([f"{kind_and_state}: {population}", *([rest] if rest else [])])

    def plot(self):
        """A plotly figure: the learning curves coloured by lineage (the member whose first weights each segment
        carries on), with each exploit marked, and each perturbed hyperparameter's schedule over the steps."""
        from ._plots import population_figure

        self.record.load_details()
        return population_figure(self.record.definition, self.trial_records(), self.status_line())
