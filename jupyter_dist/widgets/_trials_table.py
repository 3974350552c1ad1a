"""The live widget's "Trials" tab as HTML: the trials the view hands it (the best, ``best_first``), a row each,
and a line saying how many of how many it shows.

A function of the experiment (its parameters' names, its curve's metric, which resumes are news) and the records
it is given, apart from the view's widgets and redraw bookkeeping: the view decides which trials to show and when
to draw them again; this decides how they read.
"""

from __future__ import annotations

import html
import time

from ..experiment import Experiment
from ..protocol import TrialState
from ..store import QUEUED, TrialRecord
from ._base import MUTED, format_duration


def trials_table(exp: Experiment, records: list[TrialRecord], total: int) -> str:
    """``records`` (the best trials, best first) as a table of trial, labels, state, value, the other objectives,
    params, steps and duration; above it, when ``total`` is more, how many of how many it shows."""
    labels = list(records[0].labels) if records else []
    names = exp.record.param_names()  # the search space's order, as the summary
    objective = exp.record.definition.objective
    others = [str(m) for m in objective.metrics[1:]] if objective.several else []  # a column each
    head = "".join(
        f"<th>{html.escape(h)}</th>"
        for h in [
            "trial",
            *labels,
            "state",
            exp._curve_metric or "value",
            *others,
            *names,
            "steps",
            "duration",
        ]
    )
    rows = []
    now = time.time()
    metric = exp._curve_metric
    for r in records:
        running = r.state is TrialState.RUNNING
        value = r.last.get(metric) if running and metric else r.value  # a running trial: its latest
        duration = r.seconds(now)
        state = QUEUED if r.queued else r.state
        cells = [
            r.trial_id,
            *(_fmt(r.labels.get(n)) for n in labels),
            (
                f"{state} · resumed from step {r.resumed_from}"
                if r.resumed_from is not None and exp._resume_is_news(r)
                else state
            ),
            _fmt(value),
            *(_fmt(r.last.get(m)) for m in others),
            *(_fmt(r.params.get(n)) for n in names),
            r.steps,
            format_duration(duration) if duration is not None else "",
        ]
        style = (
            " style='opacity:0.5'"
            if r.state in (TrialState.PRUNED, TrialState.STOPPED)
            else (" style='color:#d62728'" if r.state is TrialState.FAILED else "")
        )
        rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    shown = (
        f"<div class='jupyter-dist-shown' style='{MUTED};font-size:12px'>showing the best {len(records):,} of "
        f"{total:,} trials (exp.trials has them all)</div>"
        if total > len(records)
        else ""
    )
    return (
        f"{shown}<table class='jupyter-dist-trials'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):  # an ablation trial's features
        return ", ".join(map(str, value))
    return str(value)
