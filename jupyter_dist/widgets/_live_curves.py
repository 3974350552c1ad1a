"""The live widget's learning curves: its plotly figure and a trace per trial it shows.

The view redraws every couple of seconds while a run may have 100,000 trials, so the figure holds only the trials
the view hands it (the best and the running ones), redraws a trace only when its curve or state changed, and gives
the trace of a trial that drops out to one that comes in rather than growing a trace per trial. plotly is imported
here, when a view is made, not at package import.
"""

from __future__ import annotations

from typing import Any

from ..experiment import Experiment, warm_start_curves
from ..store import TrialRecord

MAX_CURVE_POINTS = 2000  # per trial and redraw; longer curves are strided, the data itself is kept whole


def _stride(steps: list, values: list) -> tuple[list, list]:
    n = min(len(steps), len(values))
    step = max(1, n // MAX_CURVE_POINTS)
    return steps[:n:step], values[:n:step]


class LiveCurves:
    """The "Learning curves" tab: ``figure`` (a plotly FigureWidget), redrawn by ``draw(shown)``."""

    def __init__(self, exp: Experiment) -> None:
        import plotly.graph_objects as go

        self.exp = exp
        self._drawn: dict[int, tuple[int, str]] = {}  # trial id -> (points drawn, state drawn)
        self._traces: dict[int, Any] = {}  # trial id -> its trace in self.figure (a plotly Scatter)
        self.figure = go.FigureWidget(
            layout=go.Layout(
                height=320,
                margin={"l": 50, "r": 10, "t": 30, "b": 40},
                template="plotly_white",
                title={"text": f"{exp._curve_metric or 'metric'} per step", "font": {"size": 13}},
                xaxis={"title": "step"},
                yaxis={"title": exp._curve_metric or ""},
                showlegend=False,
            )
        )
        # The earlier trials a warm start told the sampler: their curves never change, drawn once, first (under the
        # run's own), in grey.
        warm = warm_start_curves(exp.record.definition, MAX_CURVE_POINTS)
        if warm is not None:
            self.figure.add_trace(warm)

    def draw(self, shown: list[TrialRecord]) -> None:
        """The learning curves of ``shown``: a trace each, redrawn when its curve or state changed; the trace of
        a trial no longer shown is given to one that now is, or removed, so the figure holds about
        MAX_CURVES + running traces however many trials have ended."""
        wanted = {r.trial_id: r for r in shown if r.curve_values}
        changed = [
            r for r in wanted.values() if self._drawn.get(r.trial_id) != (len(r.curve_values), r.state)
        ]
        gone = [trial_id for trial_id in self._traces if trial_id not in wanted]
        if not changed and not gone:
            return
        with self.figure.batch_update():
            if self.figure.layout.yaxis.title.text != self.exp._curve_metric:  # known once reports arrive
                self.figure.layout.yaxis.title.text = self.exp._curve_metric
                self.figure.layout.title.text = f"{self.exp._curve_metric} per step"
            free = []
            for trial_id in gone:
                free.append(self._traces.pop(trial_id))
                del self._drawn[trial_id]
            for rec in changed:
                x, y = _stride(rec.curve_steps, rec.curve_values)
                trace = self._traces.get(rec.trial_id)
                if trace is None and free:  # a trace that showed a trial now out of the figure
                    trace = self._traces[rec.trial_id] = free.pop()
                    trace.name = f"trial {rec.trial_id}"
                if trace is None:
                    self.figure.add_scatter(
                        x=x, y=y, mode="lines", name=f"trial {rec.trial_id}", **self.exp._curve_style(rec)
                    )
                    self._traces[rec.trial_id] = self.figure.data[-1]
                else:
                    trace.x, trace.y = x, y
                    trace.update(self.exp._curve_style(rec))
                self._drawn[rec.trial_id] = (len(rec.curve_values), rec.state)
            if free:
                unused = {id(trace) for trace in free}
                self.figure.data = [trace for trace in self.figure.data if id(trace) not in unused]
