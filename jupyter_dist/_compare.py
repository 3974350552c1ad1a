"""``jupyter_dist.compare(*experiments_or_names)``: experiments side by side, as a table and a figure (what
optuna-dashboard's compare screen shows, in the notebook)."""

from __future__ import annotations

from typing import Any

from ._stored import load
from .errors import ArgumentError
from .experiment import Experiment
from .protocol import Direction, TrialState

__all__ = ["Comparison", "compare"]

SUMMARY_COLUMNS = ["name", "kind", "state", "trials", "best_value", "best_params", "duration", "started"]


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

        rows = []
        for exp in self.experiments:
            best = exp.record.best() if exp.metric and not exp.record.definition.objective.several else None
            rows.append(
                {
                    "name": exp.name,
                    "kind": str(exp.kind),
                    "state": str(exp.state),
                    "trials": exp.done,
                    "best_value": None if best is None else best.value,
                    "best_params": None if best is None else dict(best.params),
                    "duration": exp.record.duration(),
                    "started": exp.started,
                }
            )
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
    objective = exp.record.definition.objective
    if not objective.metric:
        return [], []
    done = [
        r
        for r in exp.trial_records()
        if r.state is TrialState.COMPLETED and r.value is not None and r.duration is not None
    ]
    done.sort(key=lambda r: r.started + (r.duration or 0.0))
    pick = max if objective.direction is Direction.MAX else min
    ended: list[float] = []
    best: list[float] = []
    for rec in done:
        value = float(rec.value)  # type: ignore[arg-type]  # completed with a value (above)
        ended.append(rec.started + (rec.duration or 0.0) - exp.started)
        best.append(value if not best else pick(best[-1], value))
    return ended, best
