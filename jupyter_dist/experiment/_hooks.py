"""The private methods a kind of experiment overrides (``PopulationExperiment``, ``AblationExperiment``,
``DataParallelExperiment``), with ``Experiment``'s defaults: how a trial runs again or trains on alone
(``exp.reproduce``, ``exp.extend``), how the views draw a run and headline it, and the trackers' report listener.

They are a base class of their own so that ``Experiment`` lists only what the user is offered: the views, the
trackers and reproduce/extend call these, the user never does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError
from ..protocol import TrialState
from ..store import ExperimentRecord, TrialRecord
from ._frames import best_first
from ._status import format_params

__all__ = ["ExperimentHooks"]


class ExperimentHooks:
    """What a kind of experiment may change of how it is run again, trained on and drawn (``Experiment``'s base)."""

    record: ExperimentRecord  # (Experiment sets it)
    # (completed trials, Pareto front size) when _highlight last worked the front out (several objectives).
    _front_size: tuple[int, int] | None = None

    # --- a trial run again or trained on alone (exp.reproduce, exp.extend) -------------------------------------
    def _reproduction(self, rec: TrialRecord) -> dict[str, Any]:
        """How ``rec`` runs again alone (run_again's ``until_step``), or an ArgumentError saying why it cannot."""
        _single_process(
            self.record,
            rec,
            "reproduce runs a single-process trial: run it with data_parallel(fn, workers=...) and its parameters",
        )
        return {}

    def _trial_function(self, fn: Callable) -> Callable:
        """What runs the user's ``fn`` as this kind's trials ran (an ablation study's removes modules)."""
        return fn

    def _extendable(self, rec: TrialRecord) -> None:
        """An ArgumentError saying why ``rec`` cannot be trained on alone, if it cannot."""
        _single_process(self.record, rec, "extend trains a single-process trial on")

    # --- what the views and the trackers read -------------------------------------------------------------------
    def _add_report_listener(self, listener: Callable[[int, list], None]) -> None:
        """Call ``listener(trial_id, rows)`` as reports arrive, ``rows`` a list of ``[step, metrics, sent_at]``;
        on the Dask IO thread, so it must be quick and must not draw."""
        self.record.add_report_listener(listener)

    def _curve_style(self, rec: TrialRecord) -> dict:
        """How a view draws the trial's learning curve (plotly line settings): pruned and failed ones dimmed."""
        from ._plots import curve_style

        return curve_style(rec)

    def _live_figure_title(self) -> str | None:
        """The title of the tab in which the widget view draws ``plot()`` live, for the runs whose figure says
        what their curves do not (several objectives: the front and the hypervolume); None: no such tab."""
        return "Pareto front" if self.record.definition.objective.several else None

    def _curves_kept(self, records: list[TrialRecord], limit: int) -> list[TrialRecord]:
        """The trials whose learning curves a saved view keeps, about ``limit`` of them: the best first."""
        return best_first(records, self.record.definition.objective)[:limit]

    def _resume_is_news(self, rec: TrialRecord) -> bool:
        """Whether a view should say that ``rec``'s attempt resumed from a checkpoint: it went on after a lost
        worker, a failure or a resumed run (a PBT segment's planned start from its member's checkpoint is not)."""
        return True

    def _final_outputs(self) -> list:
        """What a view shows below itself when the experiment ends (an ablation study: its table and chart)."""
        return []

    def _highlight(self) -> str | None:
        """The headline result so far: the best trial (an ablation study: its baseline; several objectives: the
        Pareto front)."""
        definition = self.record.definition
        if definition.objective.several:
            # The front changes only when a trial completes: worked out again then, not at every status line.
            completed = self.record.counts()[TrialState.COMPLETED.value]
            if self._front_size is None or self._front_size[0] != completed:
                from ._pareto import front

                found = front(self.record.trial_records(), definition.objective)
                self._front_size = (completed, len(found))
            size = self._front_size[1]
            return f"Pareto front: {size} trials" if size else None
        best = self.record.best()
        if best is None:
            return None
        # 4 significant digits, as every table and the JupyterLab extension write numbers
        metric = definition.objective.metric
        return f"best {metric}={best.value:.4g} (trial {best.trial_id}, {format_params(best.params)})"


def _single_process(record: ExperimentRecord, rec: TrialRecord, why: str) -> None:
    """An ArgumentError when ``rec`` is a data-parallel job of several ranks: ``why`` says what runs instead."""
    ranks = record.definition.details.get("workers_per_trial") or 1
    if ranks > 1:
        raise ArgumentError(
            f"trial {rec.trial_id} of {record.definition.name!r} is a data-parallel job of {ranks} ranks; {why}"
        )
