"""A data-parallel run as the user reads it: one trial of N ranks, rank 0's result and metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError, NoResultError
from ..protocol import TrialState
from ..store import ExperimentRecord
from ._experiment import Experiment


class DataParallelExperiment(Experiment):
    """What ``data_parallel()`` returns: an Experiment of one trial run by ``workers`` ranks; ``result`` is rank
    0's return value, ``rank_results`` every rank's, ``history`` rank 0's reports."""

    def __init__(self, record: ExperimentRecord, stop: Callable[[], None] | None = None) -> None:
        super().__init__(record, stop)
        self.workers: int | None = record.definition.details.get("workers")

    @property
    def result(self) -> Any:
        """Rank 0's return value, whole (a number, a dict, a state dict, a model...)."""
        records = self.trial_records()
        if not records or records[0].state is TrialState.RUNNING:
            raise NoResultError(f"data-parallel run {self.name!r} has no result yet (state: {self.state})")
        return records[0].result

    @property
    def rank_results(self) -> list:
        """Every rank's return value, in rank order."""
        records = self.trial_records()
        return list(records[0].rank_results or []) if records else []

    def _reproduction(self, rec) -> dict[str, Any]:
        raise ArgumentError(
            f"{self.name!r} is a data-parallel run of {self.world_size} ranks; reproduce runs a single-process "
            f"trial: run data_parallel() again with its arguments (its ranks are seeded from exp.seed={self.seed})"
        )

    def _extendable(self, rec) -> None:
        raise ArgumentError(
            f"{self.name!r} is a data-parallel run of {self.world_size} ranks: run data_parallel() again with "
            f"name={self.name!r}, resume=True and the larger budget; it goes on from its newest checkpoint as its "
            "next attempt"
        )

    def _highlight(self) -> str | None:
        """The headline result so far: the ranks, and the last metrics rank 0 reported."""
        records = self.trial_records()
        if not records or not records[0].last:
            return None
        rec = records[0]
        shown = ", ".join(f"{k}={v:.4g}" for k, v in list(rec.last.items())[:4])
        line = f"{self.world_size} ranks · rank 0: {shown} (step {rec.steps - 1})"
        if rec.restarts:  # an elastic job that regrouped: its latest restart, as it was said
            times = "once" if len(rec.restarts) == 1 else f"{len(rec.restarts)}×"
            line += f" · regrouped {times}, latest: {rec.restarts[-1]['message']}"
        return line

    @property
    def world_size(self) -> int | None:
        """How many ranks the job runs on now (or ended on): ``workers``, unless an elastic job regrouped."""
        records = self.trial_records()
        if records and records[0].restarts:
            return records[0].restarts[-1]["world_after"]
        return self.workers

    def plot(self):
        """Rank 0's reported metrics over the steps, one panel per metric."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        history = self.history
        names = list(dict.fromkeys(history["metric"]))
        fig = make_subplots(rows=max(1, len(names)), cols=1, subplot_titles=names, shared_xaxes=True)
        for row, name in enumerate(names, start=1):
            rows = history[history.metric == name]
            fig.add_trace(go.Scatter(x=rows.step, y=rows.value, mode="lines", name=name), row=row, col=1)
        fig.update_layout(
            height=220 * max(1, len(names)) + 60,
            title=self.status_line(),
            showlegend=False,
            template="plotly_white",
        )
        return fig
