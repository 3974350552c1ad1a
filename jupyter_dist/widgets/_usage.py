"""The live widget's strip per running trial: what it uses now (its newest utilisation sample) and a sparkline of
its CPU.

The view redraws up to 5 times a second and may show hundreds of trials, so a redraw reads one sample per running
trial (the record's newest-sample index: ``UtilizationColumns.latest``), never a copy of every sample. The
sparkline's history is the view's own: the samples it saw arrive, a few dozen per running trial, forgotten when
the trial ends.
"""

from __future__ import annotations

import html
from collections import deque

from ..experiment import Experiment
from ..protocol import TrialState
from ..store import TrialRecord
from ._base import MUTED

SPARK_POINTS = 24  # samples a sparkline shows: about its trial's last 24 seconds
SPARKS = "▁▂▃▄▅▆▇█"
# Past this many running trials the strips would push the tabs out of sight: the rest are counted, not drawn
# (exp.utilization has them all).
MAX_STRIPS = 24
STYLE = "font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.5;white-space:nowrap"


def sparkline(values: list[float]) -> str:
    """``values`` (CPU percent) as block characters, scaled to one full core or to their peak if higher (a trial
    running four threads reads 400%)."""
    top = max(100.0, *values) if values else 100.0
    last = len(SPARKS) - 1
    return "".join(SPARKS[min(last, max(0, round(v / top * last)))] for v in values)


def _megabytes(mb: float) -> str:
    return f"{mb / 1024:.1f} GB" if mb >= 10 * 1024 else f"{mb:,.0f} MB"


class UsageStrips:
    """The strips' HTML, redrawn from the running trials' newest samples."""

    def __init__(self) -> None:
        self._cpu: dict[int, deque[float]] = {}  # trial id -> its CPU percent, newest last
        self._seen: dict[int, float] = {}  # trial id -> the time of its newest sample taken into _cpu

    def html(self, exp: Experiment, records: list[TrialRecord]) -> str:
        """One line per running trial that has been sampled (a queued one has not begun; a trial's first sample
        comes after about a second), or "" when none: the strip then takes no room."""
        running = [r.trial_id for r in records if r.state is TrialState.RUNNING and not r.queued]
        newest = exp.record.utilization().latest(running) if running else {}
        for trial_id in list(self._cpu):
            if trial_id not in newest:  # ended (or re-run on another worker): its history goes
                del self._cpu[trial_id], self._seen[trial_id]
        lines: list[str] = []
        for trial_id in running:
            sample = newest.get(trial_id)
            if sample is None:
                continue
            _, at, cpu, rss, gpu_util, gpu_mem = sample
            history = self._cpu.setdefault(trial_id, deque(maxlen=SPARK_POINTS))
            if self._seen.get(trial_id) != at:
                self._seen[trial_id] = at
                history.append(cpu)
            if len(lines) < MAX_STRIPS:
                lines.append(_line(trial_id, list(history), cpu, rss, gpu_util, gpu_mem))
        if not lines:
            return ""
        sampled = sum(1 for t in running if t in newest)
        if sampled > MAX_STRIPS:
            lines.append(
                f"<div style='{MUTED}'>… and {sampled - MAX_STRIPS} more running trials (exp.utilization)</div>"
            )
        return f"<div class='jupyter-dist-usage' style='{STYLE}'>{''.join(lines)}</div>"


def _line(
    trial_id: int, history: list[float], cpu: float, rss: float, gpu_util: float | None, gpu_mem: float | None
) -> str:
    parts = [f"CPU {cpu:.0f}%", f"RSS {_megabytes(rss)}"]
    # A trial that holds no GPU (or one NVML cannot read) says nothing of GPUs, rather than a misleading 0.
    if gpu_util is not None:
        parts.append(f"GPU {gpu_util:.0f}%")
    if gpu_mem is not None:
        parts.append(f"GPU mem {_megabytes(gpu_mem)}")
    spark = html.escape(sparkline(history))
    return (
        f"<div data-trial='{trial_id}'><span style='{MUTED}'>trial {trial_id}</span> "
        f"<span title='CPU %, one character a sample (about a second), newest right'>{spark}</span> "
        f"{html.escape(' · '.join(parts))}</div>"
    )
