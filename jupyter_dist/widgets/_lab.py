"""The view for JupyterLab with jupyter_dist's extension: the cell's output is one MIME bundle the extension draws.

The kernel sends little: the bundle names the experiment, and the extension follows it through the server's
REST API (the store has every report within half a second), so no figure and no widget state travel over the
kernel's websocket. A status line in the bundle's text/plain and text/html, refreshed every LINE_EVERY_S, is
what frontends without the extension show. At the end the bundle carries a snapshot of the finished experiment
(built from the kernel's record by the store's ``experiment_detail``, which builds the REST detail too, plus its
learning curves), so a saved notebook reopened without a kernel, or without a server, still shows curves, trials
and best. The bundle's JSON types are the store's wire types, which the extension shares (wire.ts).

Stopping: the extension's Stop button asks through the server, which writes a stop request into the store; the
run's store writer sees it within a flush. No comm, no subshell: the kernel stays busy, as a running cell should,
and says so every second from the preamble on (widgets/_busy.py).
"""

from __future__ import annotations

import html
import time
from typing import Any

from ..experiment import Experiment
from ..protocol import ExperimentKind
from ..store import CurvesSnapshot, ExperimentBundle, ExperimentDetail, experiment_detail, finite
from ._base import ExperimentView
from ._busy import KernelBusy

MIME_TYPE = "application/vnd.jupyter-dist.experiment+json"
BUNDLE_VERSION = 1
LINE_EVERY_S = 2.0
# In the saved snapshot: at most this many trials' curves (best first), each strided to at most this many points;
# and at most SNAPSHOT_TRIALS trials in its table (best first, the detail's first page): 10,000 trials' summaries
# made a 6.4 MB notebook, which took JupyterLab 2.1-2.5 s to open (0.9 s with 1,000 of them, measured in chromium).
SNAPSHOT_CURVES = 40
SNAPSHOT_POINTS = 200
SNAPSHOT_TRIALS = 1_000


def phase_bundle(phase: str, started: float) -> dict[str, Any]:
    """What the cell shows before the run exists: "starting the cluster…" and the time since the cell began."""
    data: ExperimentBundle = {"version": BUNDLE_VERSION, "phase": phase, "started": started}
    return {
        MIME_TYPE: data,
        "text/plain": f"jupyter_dist: {phase}",
    }


class Preamble:
    """The cell's output from its first instant, while the cluster starts and the function is checked; the view
    that follows takes over its display (or clears it)."""

    def __init__(self) -> None:
        from IPython.display import display

        self.started = time.time()
        self.handle = display(phase_bundle("starting…", self.started), raw=True, display_id=True)
        # Until the view that takes over has finished, or the cell ends.
        self.busy = KernelBusy.for_this_cell()

    def phase(self, text: str) -> None:
        self.handle.update(phase_bundle(text, self.started), raw=True)

    def clear(self) -> None:
        self.busy.stop()
        self.handle.update({"text/plain": ""}, raw=True)


def show(bundle: dict[str, Any], preamble: Preamble | None):
    """Show a view's first ``bundle`` in the preamble's output (so it replaces "starting…"), or in a new one;
    the display handle the view updates from then on."""
    if preamble is not None:
        preamble.handle.update(bundle, raw=True)
        return preamble.handle
    from IPython.display import display

    return display(bundle, raw=True, display_id=True)


def experiment_snapshot(exp: Experiment) -> ExperimentDetail:
    """The experiment as the REST API's detail shows it (what the extension draws), from the kernel's record, with
    the best SNAPSHOT_TRIALS trials listed (the view says how many of how many it shows, and the Experiments panel
    pages through them all)."""
    return experiment_detail(exp.record, page=SNAPSHOT_TRIALS)


def curves_snapshot(exp: Experiment) -> CurvesSnapshot:
    """The learning curves worth keeping in a saved notebook: the best trials' first, strided. Of a run of more
    than SNAPSHOT_TRIALS trials, chosen among the best trials' page (``ranked``), not every trial: a
    100,000-trial run's end costs what a small one's does."""
    record = exp.record
    many = record.trial_count() > SNAPSHOT_TRIALS
    chosen_from = record.ranked(0, SNAPSHOT_TRIALS) if many else record.trial_records()
    records = [r for r in chosen_from if r.curve_values]
    kept = exp._curves_kept(records, SNAPSHOT_CURVES)
    trials = []
    for rec in sorted(kept, key=lambda r: r.trial_id):
        n = min(len(rec.curve_steps), len(rec.curve_values))
        stride = max(1, -(-n // SNAPSHOT_POINTS))
        trials.append(
            [rec.trial_id, rec.attempts - 1, rec.curve_steps[:n:stride], rec.curve_values[:n:stride]]
        )
    return finite({"metric": exp._curve_metric, "trials": trials})


class LabView(ExperimentView):
    max_rate = 1.0 / LINE_EVERY_S

    def __init__(self, exp: Experiment, preamble: Preamble | None = None) -> None:
        super().__init__(exp)
        self._preamble = preamble
        self._handle = None
        self._line = ""

    def _bundle(self, ended: bool = False) -> dict[str, Any]:
        data: ExperimentBundle = {"version": BUNDLE_VERSION, "id": self.exp.id}
        if ended:
            data["snapshot"] = experiment_snapshot(self.exp)
            data["curves"] = curves_snapshot(self.exp)
            data["param_order"] = self.exp.record.param_names()
            if self.exp.record.definition.kind == ExperimentKind.HPO:
                from ..search import importances_report  # optuna: imported by the run already

                data["importances"] = importances_report(self.exp.record)
        line = self.exp.status_line()
        return {
            MIME_TYPE: data,
            "text/plain": line,
            "text/html": f"<div><b>{html.escape(line)}</b></div>",
        }

    def start(self) -> None:
        bundle = self._bundle()
        self._handle = show(bundle, self._preamble)
        self._line = bundle["text/plain"]

    def draw(self) -> None:
        # Only the status line for frontends without the extension: the extension reads the server.
        line = self.exp.status_line()
        if line != self._line and self._handle is not None:
            self._line = line
            self._handle.update(self._bundle(), raw=True)

    def finish(self) -> None:
        from IPython.display import display

        if self._handle is not None:
            bundle = self._bundle(ended=True)
            bundle["text/html"] = self.exp._repr_html_()  # the final table, for GitHub, nbviewer, nbconvert
            self._handle.update(bundle, raw=True)
        for output in self.exp._final_outputs():
            display(output)
        if self._preamble is not None:  # several experiments in one cell: one says busy at a time
            self._preamble.busy.stop()
