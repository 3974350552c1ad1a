"""The figure of a population-based-training run: learning curves coloured by lineage, the exploits marked, and
each perturbed hyperparameter's schedule, member by member, over the steps."""

from __future__ import annotations

from ..store import ExperimentDefinition, TrialRecord
from ._lineage import first_step, is_exploit, lineage_origins, member_segments

# Plotly's default qualitative palette, so members keep the colours of a plain Experiment.plot().
PALETTE = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF")


def lineage_colour(origin: int) -> str:
    return PALETTE[origin % len(PALETTE)]


def population_figure(definition: ExperimentDefinition, records: list[TrialRecord], title: str):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    metric = definition.objective.metric
    mutated = list(definition.details.get("mutations") or {})
    origins = lineage_origins(records)
    titles = [f"{metric} by step, coloured by lineage", *(f"{name} schedule" for name in mutated)]
    fig = make_subplots(
        rows=1 + len(mutated),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        row_heights=[2.0] + [1.0] * len(mutated),
        subplot_titles=titles,
    )
    legend_shown: set[int] = set()
    exploits_x, exploits_y, exploits_text = [], [], []
    for rec in sorted(records, key=lambda r: r.trial_id):
        origin = origins.get(rec.trial_id, 0)
        colour = lineage_colour(origin)
        fig.add_trace(
            go.Scatter(
                x=list(rec.curve_steps),
                y=list(rec.curve_values),
                mode="lines",
                line={"color": colour, "width": 1.5},
                name=f"lineage of member {origin}",
                legendgroup=f"lineage-{origin}",
                showlegend=origin not in legend_shown,
                hovertemplate=f"member {rec.labels.get('member')} · trial {rec.trial_id}<br>"
                "step %{x}: %{y:.4g}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        legend_shown.add(origin)
        if is_exploit(rec) and rec.curve_steps:
            exploits_x.append(rec.curve_steps[0])
            exploits_y.append(rec.curve_values[0])
            exploits_text.append(
                f"member {rec.labels['member']} copied member {rec.labels['donor']} (step {rec.labels['from_step']})"
            )
    if exploits_x:
        fig.add_trace(
            go.Scatter(
                x=exploits_x,
                y=exploits_y,
                mode="markers",
                marker={"symbol": "triangle-up", "size": 8, "color": "#444"},
                name="exploit",
                text=exploits_text,
                hovertemplate="%{text}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for row, name in enumerate(mutated, start=2):
        for member, segments in sorted(member_segments(records).items()):
            steps, values = [], []
            for rec in segments:
                value = rec.params.get(name)
                if not isinstance(value, (int, float)):
                    value = repr(value)  # a choice of strings or objects: a categorical axis
                steps.append(first_step(rec))
                values.append(value)
            fig.add_trace(
                go.Scatter(
                    x=steps,
                    y=values,
                    mode="lines+markers",
                    line={"shape": "hv", "width": 1, "color": lineage_colour(member)},
                    marker={"size": 4},
                    name=f"member {member}",
                    legendgroup=f"member-{member}",
                    showlegend=False,
                    hovertemplate=f"member {member}: {name}=%{{y}} from step %{{x}}<extra></extra>",
                ),
                row=row,
                col=1,
            )
    fig.update_xaxes(title_text="step", row=1 + len(mutated), col=1)
    fig.update_layout(title=title, height=420 + 180 * len(mutated), template="plotly_white")
    return fig
