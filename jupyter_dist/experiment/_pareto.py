"""A search with several objectives, read from its trials' records: its Pareto front, the hypervolume the front
dominated as trials completed, and their figure. The views (the REST API's detail, the lab extension, the saved
notebook) and ``Experiment.pareto`` / ``plot()`` read the same ``pareto_report``."""

from __future__ import annotations

import math

from ..protocol import Direction, Objective, TrialState
from ..search import hypervolume, minimised, non_dominated
from ..store import ExperimentDefinition, TrialRecord

__all__ = ["front", "pareto_figure", "pareto_report"]

# The hypervolume's reference point lies this share of each objective's range beyond its worst value, so the
# extreme trials of the front count too.
REFERENCE_MARGIN = 0.1


def _completed(records: list[TrialRecord], objective: Objective) -> list[tuple[TrialRecord, list[float]]]:
    """Completed trials that meet their constraints, with their vector of objectives, in the order they ended."""
    done = []
    for rec in records:
        if rec.state is not TrialState.COMPLETED:
            continue
        if rec.constraints is not None and any(c > 0 for c in rec.constraints):
            continue
        vector = objective.values(rec.value, rec.last)
        if vector is not None and all(math.isfinite(v) for v in vector):
            done.append((rec, vector))
    return sorted(done, key=lambda pair: (pair[0].started + (pair[0].duration or 0.0), pair[0].trial_id))


def front(records: list[TrialRecord], objective: Objective) -> list[tuple[TrialRecord, list[float]]]:
    """The Pareto front: (record, vector) of the feasible completed trials no other beats in every objective,
    the first objective's best first."""
    done = _completed(records, objective)
    kept = [done[i] for i in non_dominated([minimised(v, objective.directions) for _, v in done])]
    first = objective.directions[0]
    return sorted(
        kept, key=lambda pair: (-pair[1][0] if first is Direction.MAX else pair[1][0], pair[0].trial_id)
    )


def pareto_report(records: list[TrialRecord], objective: Objective) -> dict:
    """What the views draw (JSON-ready): the objectives, every feasible completed trial's vector, the front's
    trial ids, and the hypervolume of the front found by each completed trial in turn (minimised objectives,
    relative to a reference point just beyond the worst value of each)."""
    done = _completed(records, objective)
    minimal = [minimised(v, objective.directions) for _, v in done]
    report = {
        "objectives": [[m, d.value] for m, d in zip(objective.metrics, objective.directions, strict=True)],
        "trials": [[rec.trial_id, vector] for rec, vector in done],
        "front": [],
        "hypervolume": [],
        "reference": None,
    }
    if not done:
        return report
    report["front"] = sorted(done[i][0].trial_id for i in non_dominated(minimal))
    worst = [max(column) for column in zip(*minimal, strict=True)]
    best = [min(column) for column in zip(*minimal, strict=True)]
    reference = [w + REFERENCE_MARGIN * ((w - b) or abs(w) or 1.0) for w, b in zip(worst, best, strict=True)]
    report["reference"] = [
        -r if d is Direction.MAX else r for r, d in zip(reference, objective.directions, strict=True)
    ]
    found: list[list[float]] = []  # the front so far, minimised
    history, volume = [], 0.0
    for (rec, _), vector in zip(done, minimal, strict=True):
        if not any(all(x <= y for x, y in zip(f, vector, strict=True)) for f in found):  # it moves the front
            found = [f for f in found if not all(x <= y for x, y in zip(vector, f, strict=True))] + [vector]
            volume = hypervolume(found, reference)
        history.append([rec.trial_id, volume])
    report["hypervolume"] = history
    return report


def pareto_figure(definition: ExperimentDefinition, records: list[TrialRecord], title: str):
    """Two objectives: every trial and the front as a step line; three or more: parallel coordinates of the
    objectives, the front highlighted. Beside it, the hypervolume as trials completed."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    objective = definition.objective
    report = pareto_report(records, objective)
    names = objective.metrics
    on_front = set(report["front"])
    points = report["trials"]
    two = len(names) == 2
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        specs=[[{"type": "xy" if two else "domain"}, {"type": "xy"}]],
        subplot_titles=["Pareto front" if two else "objectives (front highlighted)", "hypervolume"],
    )
    if two:
        rest = [(i, v) for i, v in points if i not in on_front]
        best = sorted(((i, v) for i, v in points if i in on_front), key=lambda p: p[1][0])
        fig.add_trace(
            go.Scatter(
                x=[v[0] for _, v in rest],
                y=[v[1] for _, v in rest],
                mode="markers",
                name="dominated",
                marker={"color": "#bbb", "size": 7},
                text=[f"trial {i}" for i, _ in rest],
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=[v[0] for _, v in best],
                y=[v[1] for _, v in best],
                mode="markers+lines",
                line={"shape": "hv" if objective.directions[0] == objective.directions[1] else "vh"},
                name="Pareto front",
                marker={"color": "#d62728", "size": 9},
                text=[f"trial {i}" for i, _ in best],
            ),
            row=1,
            col=1,
        )
        fig.update_xaxes(title_text=f"{names[0]} ({objective.directions[0].value})", row=1, col=1)
        fig.update_yaxes(title_text=f"{names[1]} ({objective.directions[1].value})", row=1, col=1)
    elif points:
        fig.add_trace(
            go.Parcoords(
                line={
                    "color": [1 if i in on_front else 0 for i, _ in points],
                    "colorscale": [[0, "#ccc"], [1, "#d62728"]],
                },
                dimensions=[
                    {"label": f"{m} ({d.value})", "values": [v[k] for _, v in points]}
                    for k, (m, d) in enumerate(zip(names, objective.directions, strict=True))
                ],
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=list(range(1, len(report["hypervolume"]) + 1)),
            y=[v for _, v in report["hypervolume"]],
            mode="lines",
            line={"shape": "hv"},
            name="hypervolume",
        ),
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text="completed trials", row=1, col=2)
    fig.update_layout(title=title, height=440, template="plotly_white")
    return fig
