"""How an experiment reads in one line (``status_line``, every view's) and as a notebook's HTML output."""

from __future__ import annotations

import html
import time
from typing import Any

from ..protocol import ExperimentState
from ..search import warm_start_line
from ..store import ExperimentRecord
from ._frames import trials_frame

__all__ = ["SHOWN_COUNTS", "compute_used", "format_params", "out_of_memory_line", "repr_html", "status_line"]

# The counts a status line shows, when not zero (completed ones are in "N/M trials done").
SHOWN_COUNTS = ("running", "queued", "pruned", "failed", "stopped", "interrupted")
# How many out-of-memory trials a status line names the parameters of; past them, how many more there were.
NAMED_OUT_OF_MEMORY = 5
# How many trials (the best) an experiment's HTML output lists under its status line.
REPR_TRIALS = 10


def status_line(exp: Any) -> str:
    """An Experiment's (typed Any: it imports this module) kind, name, state, trials done, headline result, time.

    Every view calls it every couple of seconds, so it reads the record's counts and aggregates, never every trial
    (a 100,000-trial run's line costs what a 100-trial run's does)."""
    c = exp.counts()
    parts = [f"{exp.kind} {exp.name!r} {exp.state}: {exp.done}/{exp.total or '?'} trials done"]
    parts += [f"{c[s]} {s}" for s in SHOWN_COUNTS if c[s]]
    memory = out_of_memory_line(exp.record)
    if memory:
        parts.append(memory)
    highlight = exp._highlight()
    if highlight:
        parts.append(highlight)
    warm = exp.record.definition.details.get("warm_start")
    if warm:  # its sampler's earlier trials: not this run's, so not among its trials
        parts.append(warm_start_line(warm))
    if exp.state is ExperimentState.COMPLETED and exp.message:  # how a planned end came: a target reached
        parts.append(exp.message)
    used = exp.compute()
    if "saved" in used and exp.state is not ExperimentState.RUNNING:
        parts.append(f"{used['saved']:.0%} of steps saved by pruning")
    parts.append(f"{exp.elapsed:.1f}s")
    if exp.record.store_problem:  # the run goes on in memory, but a kernel restart would lose it
        parts.append(f"NOT STORED: {exp.record.store_problem}")
    return " · ".join(parts)


def repr_html(exp: Any) -> str:
    """The status line over the ten best trials (``best_first``: completed ones best first, then running ones)."""
    record = exp.record
    table = trials_frame(record.ranked(limit=REPR_TRIALS), record.definition.objective)
    if len(table):
        table = table.drop(columns=["error_kind", "error"])
    return (
        f"<div><b>{html.escape(exp.status_line())}</b>"
        f"{table.to_html(index=False, float_format=lambda v: f'{v:.4g}') if len(table) else ''}</div>"
    )


def out_of_memory_line(record: ExperimentRecord) -> str | None:
    """``2 trials ran out of memory (at batch_size=512, 1024)``: the trials that did, by the parameters that
    differ between the experiment's trials (the searched ones, not a constant path); None when none did."""
    count, hit = record.out_of_memory(NAMED_OUT_OF_MEMORY)
    if not count:
        return None
    varied = set(record.varied_params())
    keys = [k for k in hit[0].params if k in varied] or list(hit[0].params)
    shown = [{k: r.params[k] for k in keys if k in r.params} for r in hit]
    if len(keys) == 1:  # one parameter: named once, then its values
        at = f"{keys[0]}=" + ", ".join(_value(p[keys[0]]) for p in shown if p)
    else:
        at = "; ".join(format_params(p) for p in shown)
    more = f" and {count - len(shown)} more" if count > len(shown) else ""
    trials = "1 trial" if count == 1 else f"{count} trials"
    return f"{trials} ran out of memory (at {at}{more})" if at else f"{trials} ran out of memory"


def format_params(params: dict[str, Any]) -> str:
    """Parameters as a status line writes them: floats to 4 significant digits, as every table does."""
    return ", ".join(f"{k}={_value(v)}" for k, v in params.items())


def _value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else repr(v)


def compute_used(record: ExperimentRecord) -> dict[str, float]:
    """``Experiment.compute()``: reported steps and trial-seconds (a queued trial's none), all trials; with the
    definition's ``max_steps``, the share of steps saved against running every finished trial to ``max_steps``.
    The ended trials' sums are the record's (``ended_totals``), the running trials' are added here."""
    now = time.time()
    ended = record.ended_totals()
    running = record.running_records()
    used = {
        "steps": ended["steps"] + sum(r.steps for r in running),
        "trial_seconds": ended["seconds"] + sum(r.seconds(now) or 0.0 for r in running),
    }
    max_steps = record.definition.max_steps
    if max_steps and ended["trials"]:
        used["saved"] = max(0.0, 1 - ended["capped_steps"] / (ended["trials"] * max_steps))
    return used
