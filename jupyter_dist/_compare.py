"""``jupyter_dist.compare(*experiments_or_names)``: experiments side by side, as a table and a figure (what
optuna-dashboard's compare screen shows, in the notebook), and the same comparison as the REST API serves it to
the Experiments panel (``comparison_report``). Each row and best-so-far line is computed in the store
(store/_comparison.py), from the experiment's record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._stored import load
from .errors import ArgumentError
from .experiment import Experiment
from .protocol import ExperimentKind
from .store import (
    SUMMARY_COLUMNS,
    ExperimentComparison,
    ExperimentRecord,
    compared_experiment,
    summary_row,
)
from .store import best_so_far as record_best_so_far

__all__ = ["Comparison", "compare", "comparison_report"]


def compare(*experiments: Experiment | str, store: Any = None) -> Comparison:
    """Compare experiments, given as Experiments or stored names (read from ``store``, default the usual one):
    ``.summary`` is a table with a row each, ``.plot()`` a figure of their best values so far and their
    parameters' importances. A name the store lacks raises ``NotInStore``."""
    if not experiments:
        raise ArgumentError(
            "compare() needs experiments: compare(exp_a, exp_b) or compare('name-a', 'name-b')"
        )
    found = []
    for item in experiments:
        if isinstance(item, Experiment):
            found.append(item)
        elif isinstance(item, str):
            found.append(load(item, store))
        else:
            raise ArgumentError(f"compare() takes Experiments or stored names; got {item!r:.60}")
    return Comparison(found)


class Comparison:
    """Experiments side by side (``compare()``)."""

    def __init__(self, experiments: list[Experiment]) -> None:
        self.experiments = list(experiments)

    @property
    def summary(self):
        """One row per experiment: name, kind, state, trials (done), best_value, best_params, duration (seconds),
        started. An experiment with no one best trial (several objectives, none completed) has None there."""
        import pandas as pd

        rows = [summary_row(exp.record) for exp in self.experiments]
        table = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
        table["started"] = pd.to_datetime(table["started"], unit="s")
        return table

    def plot(self):
        """A plotly Figure: each experiment's best value so far by trial and by wall time (a trace each, the same
        colour in both), and its parameters' importances side by side (HPO experiments with enough trials)."""
        import plotly.graph_objects as go
        from plotly.colors import qualitative
        from plotly.subplots import make_subplots

        from .search import param_importances

        figure = make_subplots(
            rows=1,
            cols=3,
            subplot_titles=("best so far, by trial", "best so far, by wall time", "parameter importances"),
        )
        for index, exp in enumerate(self.experiments):
            colour = qualitative.Plotly[index % len(qualitative.Plotly)]
            style = {"legendgroup": exp.name, "name": exp.name, "line": {"color": colour}}
            ended, best = best_so_far(exp)
            count = list(range(1, len(best) + 1))
            figure.add_trace(go.Scatter(x=count, y=best, mode="lines+markers", **style), row=1, col=1)
            figure.add_trace(
                go.Scatter(x=ended, y=best, mode="lines", showlegend=False, **style), row=1, col=2
            )
            importances = param_importances(exp.record) if exp.kind == "hpo" else None
            if importances:
                figure.add_trace(
                    go.Bar(
                        x=list(importances),
                        y=list(importances.values()),
                        marker_color=colour,
                        legendgroup=exp.name,
                        name=exp.name,
                        showlegend=False,
                    ),
                    row=1,
                    col=3,
                )
        metrics = {exp.metric for exp in self.experiments if exp.metric}
        figure.update_xaxes(title_text="completed trials", row=1, col=1)
        figure.update_xaxes(title_text="seconds from its start", row=1, col=2)
        figure.update_yaxes(title_text=", ".join(sorted(metrics)) or "value", row=1, col=1)
        figure.update_layout(barmode="group", title="compare: " + ", ".join(e.name for e in self.experiments))
        return figure

    def _repr_html_(self) -> str:
        return self.summary.to_html(index=False, float_format=lambda v: f"{v:.4g}")

    def __repr__(self) -> str:
        return f"<Comparison of {', '.join(repr(e.name) for e in self.experiments)}>"


def best_so_far(exp: Experiment) -> tuple[list[float], list[float]]:
    """The experiment's best value of its (first) objective as its completed trials ended, in the order they
    ended: (seconds from its start, best value then) each."""
    return record_best_so_far(exp.record)


def comparison_report(records: Sequence[ExperimentRecord]) -> ExperimentComparison:
    """The comparison of ``records`` as the REST API serves it (GET /jupyter-dist/api/compare): each one's
    summary row and best-so-far line, and an HPO run's parameter importances (``importances_report``: None for
    another kind), as ``Comparison.plot()`` draws them."""
    from .search import importances_report  # optuna only when a comparison is asked for

    return {
        "experiments": [
            compared_experiment(
                record,
                importances_report(record) if record.definition.kind == ExperimentKind.HPO else None,
            )
            for record in records
        ]
    }
