"""Plotly figures of an experiment's records. Shared by ``Experiment.plot()`` and the live view's curve styling.

It reads trial records and the definition only, never an Experiment: the figures work the same for a live run
and for one read back from a store.
"""

from __future__ import annotations

from typing import Any

from ..protocol import Direction, TrialState
from ..space import Choice, Uniform
from ..store import ExperimentDefinition, TrialRecord, param_names

# A stopped trial (the user's Stop) says nothing about its configuration: it is drawn as any other, so a run
# stopped as a whole is not faded to faint dotted lines.
DIMMED_STATES = (TrialState.PRUNED, TrialState.FAILED)


def curve_style(rec: TrialRecord) -> dict:
    """How a trial's learning curve is drawn: pruned and failed trials are dimmed."""
    dimmed = rec.state in DIMMED_STATES
    return {"opacity": 0.25 if dimmed else 0.9, "line": {"dash": "dot" if dimmed else "solid", "width": 1.5}}


def curve_trace(rec: TrialRecord):
    import plotly.graph_objects as go

    return go.Scatter(
        x=list(rec.curve_steps),
        y=list(rec.curve_values),
        mode="lines",
        name=f"trial {rec.trial_id}",
        legendgroup=rec.state,
        **curve_style(rec),
    )


def _best_so_far(values: list[float], direction: Direction) -> list[float]:
    best, out = None, []
    for v in values:
        best = v if best is None or direction.better(v, best) else best
        out.append(best)
    return out


def experiment_figure(
    definition: ExperimentDefinition,
    records: list[TrialRecord],
    title: str,
    importances: dict[str, float] | None = None,
):
    """Learning curves, the objective by trial, parallel coordinates of the parameters, and (``importances``,
    search/_study.param_importances) a bar chart of the parameters' importances."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..search import IMPORTANCE_EVALUATOR

    metric = definition.objective.metric
    specs = [[{"type": "xy"}, {"type": "xy"}], [{"type": "domain", "colspan": 2}, None]]
    titles = [f"learning curves ({metric})", f"{metric} by trial", ""]
    if importances:
        specs.append([{"type": "xy", "colspan": 2}, None])
        titles.append(f"parameter importances for {metric} ({IMPORTANCE_EVALUATOR}, Optuna)")
    fig = make_subplots(
        rows=len(specs),
        cols=2,
        specs=specs,
        subplot_titles=titles,
        vertical_spacing=0.15 if not importances else 0.1,
        row_heights=None if not importances else [0.38, 0.38, 0.24],
    )
    for rec in records:
        if rec.curve_steps:
            fig.add_trace(curve_trace(rec), row=1, col=1)

    done = [r for r in records if r.state is TrialState.COMPLETED and r.value is not None]
    ids = [r.trial_id for r in done]
    values = [r.value for r in done if r.value is not None]  # (every one of them)
    fig.add_trace(
        go.Scatter(x=ids, y=values, mode="markers", name="completed trial", marker={"size": 7}), row=1, col=2
    )
    # Trials ended early show where they were when they ended (their last value), hollow.
    early = [r for r in records if r.state in (TrialState.PRUNED, TrialState.STOPPED) and r.value is not None]
    if early:
        fig.add_trace(
            go.Scatter(
                x=[r.trial_id for r in early],
                y=[r.value for r in early],
                mode="markers",
                name="pruned or stopped (last value)",
                marker={"size": 7, "symbol": "circle-open", "opacity": 0.6},
            ),
            row=1,
            col=2,
        )
    fig.add_trace(
        go.Scatter(
            x=ids,
            y=_best_so_far(values, definition.objective.direction),
            mode="lines",
            name="best so far",
            line={"shape": "hv"},
        ),
        row=1,
        col=2,
    )

    dims = _parameter_dimensions(done, definition.space)
    if dims:
        dims.append({"label": metric, "values": values})
        fig.add_trace(
            go.Parcoords(dimensions=dims, line={"color": values, "colorscale": "Viridis", "showscale": True}),
            row=2,
            col=1,
        )
    if importances:
        # least important at the bottom, as optuna.visualization.plot_param_importances draws them
        names = list(importances)[::-1]
        fig.add_trace(
            go.Bar(x=[importances[n] for n in names], y=names, orientation="h", name="importance"),
            row=3,
            col=1,
        )
        fig.update_xaxes(title_text="importance (sums to 1)", row=3, col=1)
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_xaxes(title_text="trial", row=1, col=2)
    fig.update_layout(
        height=760 if not importances else 760 + 60 + 28 * len(importances),
        # left-aligned and wrapped, so a long status line is not cut at the right edge
        title={"text": _wrapped(title), "x": 0.01, "xanchor": "left", "font": {"size": 13}},
        margin={"t": 90},
        showlegend=False,
        template="plotly_white",
    )
    return fig


def _wrapped(title: str, width: int = 90) -> str:
    """``title`` broken into lines of at most ``width`` characters at its " · " separators (plotly's <br>)."""
    lines: list[str] = []
    for part in title.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return "<br>".join(lines)


def _parameter_dimensions(done: list[TrialRecord], space: dict) -> list[dict]:
    import math

    dims = []
    for name in param_names(done):
        raw: list[Any] = [r.params.get(name) for r in done]  # whatever the trials were given
        searched_on_log = isinstance(space.get(name), Uniform) and space[name].log
        chosen = space.get(name)
        if searched_on_log and all(isinstance(v, (int, float)) and v > 0 for v in raw):
            dims.append({"label": f"log10({name})", "values": [math.log10(v) for v in raw]})
        elif not isinstance(chosen, Choice) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw
        ):
            dims.append({"label": name, "values": raw})
        else:  # categorical (a choice, even of numbers): positions, ticks labelled with the options in order
            options = (
                [repr(o) for o in chosen.options]
                if isinstance(chosen, Choice)
                else sorted({repr(v) for v in raw})
            )
            dims.append(
                {
                    "label": name,
                    "values": [options.index(repr(v)) for v in raw],
                    "tickvals": list(range(len(options))),
                    "ticktext": options,
                }
            )
    return dims
