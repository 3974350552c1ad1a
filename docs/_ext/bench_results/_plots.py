"""PLOTS: the plotly figures of the performance pages (``Plot``), and ``figure``, which draws one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._values import STOP_SOURCES, STREAM_RUNS, get


@dataclass(frozen=True)
class Plot:
    """A plotly figure from a result: ``data(r)`` is {trace: {x: y}} ("bar", "dot"), {trace: [y, ...]} ("box")
    or {trace: {label: (x, y)}} ("xy": a marker symbol per label, the same in every trace); ``lines(r)`` are
    reference lines, ("h" or "v", where, label)."""

    data: Callable[[dict], dict]
    kind: str = "bar"
    y: str = ""
    x: str = ""
    log: bool = False
    stack: bool = False
    lines: Callable[[dict], list[tuple[str, float, str]]] = lambda r: []


def _ms(seconds: float) -> float:
    return seconds * 1000


PLOTS: dict[str, dict[str, Plot]] = {
    "scalability": {
        "efficiency": Plot(
            lambda r: {
                "jupyter_dist": {k: s["efficiency"] for k, s in r["shapes"].items() if k != "dispatch"},
                "jupyter_dist 0.4.0, same machine": {
                    k: s["minimum_s"] / s["sizes"]["issue_0_4_wall_s"]
                    for k, s in r["shapes"].items()
                    if s.get("sizes", {}).get("issue_0_4_wall_s")
                },
                "Ray Tune, published": {
                    k: s["sizes"]["ray_published"]["efficiency"]
                    for k, s in r["shapes"].items()
                    if s.get("sizes", {}).get("ray_published")
                },
            },
            kind="dot",
            y="efficiency (minimum ÷ wall)",
            lines=lambda r: [("h", 1.0, "the minimum")],
        ),
    },
    "pruning": {
        "quality": Plot(
            lambda r: {
                {"none": "no pruner"}.get(pruner, pruner): {
                    label: (
                        r[bench]["runs"][pruner]["step_share"] * 100,
                        r[bench]["runs"][pruner]["best_over_reference"],
                    )
                    for bench, label in (("synthetic", "synthetic curves"), ("mlp", "digits MLP"))
                }
                for pruner in r["synthetic"]["runs"]
            },
            kind="xy",
            x="steps used, % of the no-pruner run's",
            y="best found ÷ no-pruner best",
            lines=lambda r: [
                ("v", r["target"]["max_step_share_of_no_pruner"] * 100, "target: at most"),
                ("h", 1 - r["target"]["best_within_of_no_pruner_best"], "target: at least"),
            ],
        ),
        "latency": Plot(
            lambda r: {
                STOP_SOURCES.get(source, source).split(" (")[0]: [_ms(v) for v in values]
                for source, values in r["stop_latency_s"]["raw_s"].items()
            },
            kind="box",
            y="stop latency, ms",
            lines=lambda r: [("h", _ms(r["target"]["stop_latency_p50_s"]), "target for the p50")],
        ),
    },
    "streaming": {
        "latency": Plot(
            lambda r: {
                q: {label: _ms(get(r, (*path.split("."), f"{q}_s"))) for label, path in STREAM_RUNS.items()}
                for q in ("p50", "p99")
            },
            y="report → kernel latency, ms (log scale)",
            log=True,
            lines=lambda r: [("h", _ms(r["target"]["p50_latency_s_below"]), "target for the p50")],
        ),
    },
    "ddp": {
        "samples": Plot(
            lambda r: {
                label: r["samples_per_s"][key]
                for key, label in (
                    ("plain", "plain loop"),
                    ("ranks_1", "1 rank"),
                    ("ranks_2", "2 ranks"),
                    ("torch_ddp_2", "PyTorch DDP, 2 processes"),
                )
            },
            kind="box",
            y="samples/s, each run",
        ),
    },
    "trial_speed": {
        "rounds": Plot(
            lambda r: {
                label: r["results"][key]["ratios_per_round"]
                for key, label in (("digits", "digits MLP"), ("compute", "compute-bound MLP"))
            },
            kind="box",
            y="pool wall ÷ hpo() wall, each round",
            lines=lambda r: [
                ("h", r["target"]["ratio_pool_over_ours_at_least"], "target"),
                ("h", 1.0, "as fast as the pool"),
            ],
        ),
    },
    "gpu": {
        "steps": Plot(
            lambda r: {
                side: {
                    label: r["data_parallel"]["median_step_ms"][keys[i]]
                    for label, keys in (
                        ("fp32", ("plain_fp32", "data_parallel_fp32")),
                        ("bf16", ("plain_bf16", "data_parallel_bf16")),
                        ("fp16", ("plain_fp16", "data_parallel_fp16")),
                        ("FSDP, fp32", ("plain_fsdp_fp32", "fsdp_fp32")),
                    )
                }
                for i, side in enumerate(("plain PyTorch", "data_parallel()"))
            },
            y="ms a step (median)",
        ),
    },
    "cost_model": {
        "cores": Plot(
            lambda r: {
                proc: {p["label"]: p["cores"][proc] for p in r["points"]}
                for proc in ("kernel", "scheduler", "workers")
            },
            y="cores (CPU seconds a second)",
            stack=True,
        ),
    },
}


SYMBOLS = ("circle", "diamond", "square", "triangle-up")


def figure(plot: Plot, r: dict) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in plot.data(r).items():
        if plot.kind == "box":
            fig.add_box(y=values, name=name, boxpoints="all", jitter=0.4, pointpos=0)
        elif plot.kind == "xy":
            xs, ys = zip(*values.values(), strict=True)
            symbols = [SYMBOLS[i % len(SYMBOLS)] for i in range(len(xs))]  # a symbol per label, in order
            fig.add_scatter(
                x=xs,
                y=ys,
                hovertext=list(values),
                name=name,
                mode="markers",
                marker={"symbol": symbols, "size": 11},
            )
        elif plot.kind == "dot":
            fig.add_scatter(
                x=list(values), y=list(values.values()), name=name, mode="markers", marker_size=11
            )
        else:
            fig.add_bar(x=list(values), y=list(values.values()), name=name)
    for direction, at, label in plot.lines(r):
        if direction == "v":
            fig.add_vline(at, line_dash="dot", line_color="grey", annotation_text=label)
            continue
        fig.add_hline(at, line_dash="dot", line_color="grey")
        # its label apart: an annotation on a log axis is placed in log10 units, the line in data units
        y = math.log10(at) if plot.log else at
        fig.add_annotation(
            text=label, xref="paper", x=1, y=y, showarrow=False, xanchor="right", yanchor="bottom"
        )
    fig.update_layout(
        template="plotly_white",
        barmode="stack" if plot.stack else "group",
        showlegend=plot.kind != "box",
        xaxis_title=plot.x,
        yaxis_title=plot.y,
        yaxis_type="log" if plot.log else None,
        margin={"l": 60, "r": 20, "t": 30, "b": 60},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
