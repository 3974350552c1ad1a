"""Plotly figures of an experiment's records. Shared by ``Experiment.plot()`` and the live view's curve styling.

It reads trial records and the definition only, never an Experiment: the figures work the same for a live run
and for one read back from a store.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..protocol import Direction, TrialState
from ..space import Choice, Uniform
from ..store import ExperimentDefinition, TrialRecord, best_first, param_names

# A stopped trial (the user's Stop) says nothing about its configuration: it is drawn as any other, so a run
# stopped as a whole is not faded to faint dotted lines.
DIMMED_STATES = (TrialState.PRUNED, TrialState.FAILED)
# The trials hpo(warm_start=) told the sampler first were run by earlier experiments, not by this one: drawn apart,
# muted (the lab extension draws them in the same grey: chart.ts WARM_START_COLOUR).
WARM_START_COLOUR = "#9e9e9e"
# Past this many trials with a curve, the best CURVE_TRACES are drawn a trace each (hovering names the trial) and
# the others as one muted trace, its curves strided to OTHER_CURVE_POINTS points in all: a trace per trial of a
# 100,000-trial run would be 100,000 traces, which no browser draws.
CURVE_TRACES = 40
OTHER_CURVE_POINTS = 100_000
# Past this many trials the objective-by-trial chart is drawn with WebGL, in smaller markers; and the parallel
# coordinates draw the best PARCOORDS_TRIALS completed trials (their title says how many of how many).
MANY_TRIALS = 1_000
PARCOORDS_TRIALS = 2_000


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


def curve_traces(records: list[TrialRecord], definition: ExperimentDefinition) -> list:
    """The learning curves of ``records``: a trace each, or past CURVE_TRACES trials with a curve, a trace each
    for the best CURVE_TRACES (``best_first``) and one muted trace of all the others (None between the curves,
    each strided so that they hold OTHER_CURVE_POINTS points in all), drawn under them."""
    import plotly.graph_objects as go

    with_curves = [r for r in records if r.curve_steps]
    if len(with_curves) <= CURVE_TRACES:
        return [curve_trace(r) for r in with_curves]
    ranked = best_first(with_curves, definition.objective)
    own, others = ranked[:CURVE_TRACES], sorted(ranked[CURVE_TRACES:], key=lambda r: r.trial_id)
    budget = max(2, OTHER_CURVE_POINTS // len(others))  # points per curve
    x: list[float | None] = []
    y: list[float | None] = []
    for rec in others:
        n = min(len(rec.curve_steps), len(rec.curve_values))
        stride = max(1, -(-n // budget))
        x.extend([*rec.curve_steps[:n:stride], None])
        y.extend([*rec.curve_values[:n:stride], None])
    rest = go.Scattergl(
        x=x,
        y=y,
        mode="lines",
        name=f"{len(others):,} other trials",
        opacity=0.15,
        line={"color": WARM_START_COLOUR, "width": 1},
        hoverinfo="skip",
    )
    return [rest, *(curve_trace(r) for r in own)]


class WarmStartPoint(NamedTuple):
    """An earlier trial hpo(warm_start=) told the sampler, as the objective chart draws it."""

    experiment: str
    trial_id: int  # its id in its experiment
    completed: bool  # else pruned
    value: float  # a completed trial's value, a pruned one's last


def warm_start_points(definition: ExperimentDefinition) -> list[WarmStartPoint]:
    """Each earlier trial hpo(warm_start=) told the sampler (``details["warm_start"]``) that has a value of the
    objective, in the order told; none for a run not warm-started, or one of several objectives (no one value to
    draw by trial: the Pareto front's views draw a run's own trials only)."""
    warm = definition.details.get("warm_start")
    if not warm or definition.objective.several:
        return []
    points = []
    for told in warm["trials"]:
        completed = told["state"] == "completed"
        value = told["values"][0] if completed else (told["curve"][-1][1] if told["curve"] else None)
        if value is not None:
            points.append(WarmStartPoint(told["experiment"], told["trial_id"], completed, value))
    return points


def warm_start_label(definition: ExperimentDefinition, count: int) -> str:
    """The legend's name for ``count`` warm-start trials: "warm start (14 from 'a', 'b')"."""
    names = ", ".join(repr(name) for name in definition.details["warm_start"]["from"])
    return f"warm start ({count} from {names})"


def warm_start_trace(definition: ExperimentDefinition):
    """The objective-by-trial chart's trace of the earlier trials hpo(warm_start=) told (``warm_start_points``),
    or None: grey, at trials -n to -1, before the run's own trial 0 (their ids were another run's), a completed
    one filled, a pruned one hollow at its last value; hovering names its experiment and trial."""
    import plotly.graph_objects as go

    points = warm_start_points(definition)
    if not points:
        return None
    return go.Scatter(
        x=list(range(-len(points), 0)),
        y=[p.value for p in points],
        text=[f"{p.experiment!r} trial {p.trial_id}" for p in points],
        hovertemplate="%{text}: %{y}<extra>warm start</extra>",
        mode="markers",
        name=warm_start_label(definition, len(points)),
        marker={
            "size": 6,
            "color": WARM_START_COLOUR,
            "symbol": ["circle" if p.completed else "circle-open" for p in points],
        },
    )


def warm_start_curves(definition: ExperimentDefinition, max_points: int):
    """The learning curves (the objective's intermediate values) of the earlier trials hpo(warm_start=) told, as
    one grey dotted trace, the curves apart (None between them), each strided to at most ``max_points``; or None.
    One trace, not one a trial: they never change, and a search warm-started from hundreds of trials would
    otherwise send hundreds of traces to a live figure."""
    import plotly.graph_objects as go

    warm = definition.details.get("warm_start")
    curves = [told["curve"] for told in (warm or {}).get("trials", []) if told["curve"]]
    if not curves:
        return None
    x: list[float | None] = []
    y: list[float | None] = []
    for curve in curves:
        stride = max(1, -(-len(curve) // max_points))
        x.extend([step for step, _ in curve[::stride]] + [None])
        y.extend([value for _, value in curve[::stride]] + [None])
    return go.Scatter(
        x=x,
        y=y,
        mode="lines",
        name=warm_start_label(definition, len(curves)),
        opacity=0.5,
        line={"color": WARM_START_COLOUR, "dash": "dot", "width": 1},
        hoverinfo="skip",
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
    done = [r for r in records if r.state is TrialState.COMPLETED and r.value is not None]
    shown = done  # in the parallel coordinates: the best of them, 100,000 lines being one blot
    if len(done) > PARCOORDS_TRIALS:
        shown = best_first(done, definition.objective)[:PARCOORDS_TRIALS]
    specs = [[{"type": "xy"}, {"type": "xy"}], [{"type": "domain", "colspan": 2}, None]]
    titles = [
        f"learning curves ({metric})",
        f"{metric} by trial",
        f"parameters of the best {len(shown):,} of {len(done):,} completed trials"
        if shown is not done
        else "",
    ]
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
    for trace in curve_traces(records, definition):
        fig.add_trace(trace, row=1, col=1)

    # The earlier trials a warm start told: fixed, drawn first, under the run's own.
    warm = warm_start_trace(definition)
    if warm is not None:
        fig.add_trace(warm, row=1, col=2)
    ids = [r.trial_id for r in done]
    values = [r.value for r in done if r.value is not None]  # (every one of them)
    many = len(records) > MANY_TRIALS
    points = go.Scattergl if many else go.Scatter  # thousands of markers: WebGL
    size = 4 if many else 7
    fig.add_trace(
        points(x=ids, y=values, mode="markers", name="completed trial", marker={"size": size}), row=1, col=2
    )
    # Trials ended early show where they were when they ended (their last value), hollow.
    early = [r for r in records if r.state in (TrialState.PRUNED, TrialState.STOPPED) and r.value is not None]
    if early:
        fig.add_trace(
            points(
                x=[r.trial_id for r in early],
                y=[r.value for r in early],
                mode="markers",
                name="pruned or stopped (last value)",
                marker={"size": size, "symbol": "circle-open", "opacity": 0.6},
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

    dims = _parameter_dimensions(shown, definition.space)
    if dims:
        dims.append({"label": metric, "values": [r.value for r in shown]})
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
    fig.update_xaxes(title_text="trial id", row=1, col=2)
    fig.update_yaxes(title_text=metric, row=1, col=1)
    fig.update_yaxes(title_text=metric, row=1, col=2)
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
