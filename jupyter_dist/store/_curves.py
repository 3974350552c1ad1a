"""The learning curves the REST API sends (GET .../curves): the trials a caller names (``TrialSet``), their reports
read from the store after a cursor (``wanted_reports``), assembled into one curve per trial as the views assemble
them (``assemble_curves``) and thinned to the points a chart can show (``thinned``).

Kept apart from ``StoreReader`` (_reader.py), which checks the request and opens the store: these are plain
functions of the reports, following the same rules as the views (labextension/src/curves.ts), so they are easier to
compare with those when kept in one place.
"""

from __future__ import annotations

import math
import re

from ..errors import ArgumentError
from ._sqlite import Database

# Points per learning curve: what the views ask for by default (a chart a thousand pixels wide), and the most a
# caller may ask for.
CURVE_POINTS = 200
MAX_CURVE_POINTS = 5_000
# "3,17,40-59,9000-": ids, ranges, and every id from one on (the trials that start after the caller looked).
TRIAL_SPEC = re.compile(r"^\d+(-\d*)?(,\d+(-\d*)?)*$")
MAX_SPEC_CHARS = 50_000


class TrialSet:
    """The trials a caller names, as the curves endpoint takes them: ``"3,17,40-59,9000-"`` (ids, inclusive
    ranges, and every trial from an id on); None: every trial."""

    def __init__(self, spec: str | None) -> None:
        self.everything = spec is None
        self.ids: set[int] = set()
        self.ranges: list[tuple[int, float]] = []
        if spec is None:
            return
        if len(spec) > MAX_SPEC_CHARS or not TRIAL_SPEC.match(spec):
            raise ArgumentError(
                f"trials={spec[:80]!r}: trial ids, ranges and open ranges separated by commas, like 3,17,40-59,9000-"
            )
        for part in spec.split(","):
            low, dash, high = part.partition("-")
            if not dash:
                self.ids.add(int(low))
            else:
                self.ranges.append((int(low), int(high) if high else math.inf))

    def __contains__(self, trial_id: int) -> bool:
        return (
            self.everything
            or trial_id in self.ids
            or any(low <= trial_id <= high for low, high in self.ranges)
        )


def thinned(steps: list[int], values: list[float], points: int) -> tuple[list[int], list[float]]:
    """A curve cut to at most ``points`` points spread evenly over it, its first and latest always kept."""
    n = len(steps)
    if n <= points:
        return steps, values
    if points == 1:
        return steps[-1:], values[-1:]
    kept = [round(i * (n - 1) / (points - 1)) for i in range(points)]
    return [steps[i] for i in kept], [values[i] for i in kept]


def wanted_reports(
    db: Database, experiment_id: str, wanted: TrialSet, since: int = 0
) -> tuple[list[tuple], int]:
    """The reports of the ``wanted`` trials after cursor ``since``, in arrival order, (trial_id, attempt, step,
    metrics), and the cursor of the experiment's last report (``since`` when there is none after it).

    The one place the curves read reports: the wanted trials' batches (Database.trial_report_batches, one decode
    per chunk of 1,000 reports, the others dropped), expanded into rows. 1M reports: ~0.5 s of CPU, against ~4 s
    through report_page's row per report."""
    # A TrialSet holds ints only (its __contains__ takes an int, where Container's takes any object).
    batches, cursor = db.trial_report_batches(experiment_id, wanted, since)  # type: ignore[arg-type]
    rows = [
        (trial_id, attempt, step, metrics)
        for _, trial_id, attempt, reports in batches
        for step, metrics, _ in reports
    ]
    return rows, cursor


def assemble_curves(
    rows: list[tuple], metric: str | None
) -> tuple[str | None, dict[int, tuple[int, list[int], list[float]]]]:
    """Each trial's learning curve of ``metric`` (None: the first one reported) from its reports in arrival order,
    as the views assemble them (labextension/src/curves.ts): a later attempt's points replace the earlier
    attempt's from its first step on (an attempt resumed from a checkpoint continues the curve; one started over
    replaces it); a point with no finite value is left out."""
    curves: dict[int, tuple[int, list[int], list[float]]] = {}
    for trial_id, attempt, step, metrics in rows:
        if metric is None:
            metric = next(iter(metrics), None)
        value = metrics.get(metric)
        if value is None or not math.isfinite(value):
            continue
        curve = curves.get(trial_id)
        if curve is None or attempt > curve[0]:
            steps, values = curve[1:] if curve else ([], [])
            kept = next((i for i, s in enumerate(steps) if s >= step), len(steps))
            curve = curves[trial_id] = (attempt, steps[:kept], values[:kept])
        elif attempt < curve[0]:
            continue  # a late report of an attempt that was replaced
        curve[1].append(step)
        curve[2].append(value)
    return metric, curves
