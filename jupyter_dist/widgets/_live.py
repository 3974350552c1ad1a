"""The live widget: progress, best so far, learning curves, a trials table, each trial's output, a Stop button.

It owns the widgets and when each part is redrawn; the curves' figure and traces are _live_curves', the trials
table's HTML is _trials_table's. ipywidgets and plotly are imported here (and there), not at package import, so
``%load_ext jupyter_dist`` stays cheap.
"""

from __future__ import annotations

import html
import time
from collections import deque

from ..experiment import SHOWN_COUNTS, Experiment
from ..protocol import ExperimentState, TrialState
from ..store import TrialRecord
from ._base import ExperimentView, early_stopping_note, format_duration, importances_table
from ._lab import show
from ._live_curves import LiveCurves
from ._scroll import ScrollPane
from ._side_thread import route_to, side_thread
from ._trials_table import trials_table
from ._usage import UsageStrips

FIGURE_EVERY_S = 2.0  # the run's own figure (exp.plot()) is redrawn at most this often while it runs
MAX_TABLE_ROWS = 200
# A redraw reads pages of the record, never every trial, so a 100,000-trial run draws as fast as a 100-trial one:
# the curves of the MAX_CURVES best trials and of the running ones (a trial that falls out gives its trace to one
# that comes in), the table's MAX_TABLE_ROWS best, and in the output tab's picker the running trials (the newest
# PICKER_RUNNING), the newest PICKER_FAILED failed ones, the PICKER_BEST best and the PICKER_RECENT that ended last.
MAX_CURVES = 20
PICKER_RUNNING = 50
PICKER_FAILED = 20
PICKER_BEST = 10
PICKER_RECENT = 20
# exp.plot() reads every trial: its tab is redrawn at most every FIGURE_EVERY_S, and at most this share of the time.
FIGURE_SHARE = 0.1
MAX_LOG_CHARS = 50_000
# Notebook output's own link colour (JupyterLab's variable, with its light-theme value where there is none).
LINK_STYLE = "color:var(--jp-content-link-color,#1976d2);text-decoration:underline"


class LiveView(ExperimentView):
    def __init__(self, exp: Experiment, preamble=None) -> None:
        import ipywidgets as w
        import plotly.graph_objects as go

        super().__init__(exp)
        self._running: set[int] = set()  # the trials running at the last draw
        self._recent: deque[int] = deque(maxlen=PICKER_RECENT)  # the trials seen to end, the newest last
        self._failed: tuple[int, list[TrialRecord]] = (0, [])  # (failed trials, the newest PICKER_FAILED)
        self._display = None  # the handle of the displayed view, to leave a text summary in it at the end
        self._preamble = preamble  # the cell's "starting…" output, which the view replaces
        self._table_key: tuple | None = None
        self._log_choice_by_user = False
        self._picking = False  # True while the view itself moves the trial picker

        self.title = w.HTML()
        self.progress = w.IntProgress(
            min=0, max=max(exp.total or 1, 1), bar_style="info", layout=w.Layout(width="40%")
        )
        self.counts = w.HTML()
        self.stats = w.HTML()
        # What each running trial uses now: a line each, empty (no room taken) when none runs or has a sample.
        self.usage = ScrollPane(max_height="120px")
        self._usage = UsageStrips()
        self.stop_button = w.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip="Stop gracefully: finished trials are kept",
        )
        self.stop_button.on_click(self._on_stop)
        self._curves = LiveCurves(exp)  # the learning curves: their figure, a trace per trial shown
        self.figure = self._curves.figure
        self.table = ScrollPane(max_height="320px")
        self.log_picker = w.Dropdown(description="trial", options=[], layout=w.Layout(width="260px"))
        self.log_picker.observe(self._on_pick, names="value")
        self.log_text = ScrollPane(follow=True)
        # What this kind of run draws beyond its curves (a PBT run's lineage and schedules, a multi-objective
        # search's front and hypervolume): exp.plot(), redrawn in a tab of its own at most every FIGURE_EVERY_S.
        self.extra_title = exp._live_figure_title()
        self.extra = go.FigureWidget(layout=go.Layout(template="plotly_white")) if self.extra_title else None
        self._extra_key: tuple | None = None
        self._extra_drawn = 0.0
        self._extra_wait = FIGURE_EVERY_S
        children = [self.figure, self.table, w.VBox([self.log_picker, self.log_text])]
        titles = ["Learning curves", "Trials", "Output"]
        if self.extra is not None:
            children.insert(1, self.extra)
            titles.insert(1, self.extra_title or "")  # (there is an extra figure only with a title)
        tabs = w.Tab(children=children, titles=titles)
        self.box = w.VBox(
            [
                self.title,
                w.HBox([self.progress, self.counts, self.stop_button], layout=w.Layout(align_items="center")),
                self.stats,
                self.usage,
                tabs,
            ]
        )

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:

        subshell, why_not = side_thread()
        if subshell is None:
            self.stop_button.disabled = True
            self.stop_button.tooltip = why_not
        else:  # routed before it is shown, so even the first click is heard while this cell is busy
            route_to(self.stop_button, subshell)
            route_to(self.log_picker, subshell)
        bundle = self.box._repr_mimebundle_()
        # Where no widget frontend renders it (nbconvert, a plain viewer), this text stands in for the view.
        bundle["text/plain"] = (
            f"jupyter_dist live view of {self.exp.kind} {self.exp.name!r} (needs a widget frontend)"
        )
        self._display = show(bundle, self._preamble)
        super().start()

    def finish(self) -> None:
        from IPython.display import display

        self.stop_button.disabled = True
        # The button says how the run ended, not "Stopping…" forever.
        self.stop_button.description = str(self.exp.state).capitalize()
        self.stop_button.icon = "check" if self.exp.state is ExperimentState.COMPLETED else "stop"
        self.stop_button.button_style = ""
        self.draw()
        if self._display is not None:
            # Frontends without widgets (nbconvert, a saved notebook in a plain viewer) keep the text: make it
            # the final summary rather than a placeholder.
            bundle = self.box._repr_mimebundle_()
            bundle["text/plain"] = self.exp.status_line()
            self._display.update(bundle, raw=True)
        for output in self.exp._final_outputs():
            display(output)
        importances = importances_table(self.exp)
        if importances is not None:
            display(importances)
        if self._preamble is not None:  # several experiments in one cell: one says busy at a time
            self._preamble.busy.stop()

    def _on_stop(self, _button) -> None:
        self.stop_button.description = "Stopping…"
        self.stop_button.disabled = True
        self.exp.stop()

    def _on_pick(self, change) -> None:
        if not self._picking:  # the user chose a trial: stop following the latest one
            self._log_choice_by_user = True
        self._draw_log()

    # --- drawing ---------------------------------------------------------------------------------------
    def draw(self) -> None:
        exp = self.exp
        record = exp.record
        c = exp.counts()
        done = exp.done
        state_colour = {"running": "#1f77b4", "completed": "#2ca02c", "stopped": "#ff7f0e"}.get(
            exp.state, "#d62728"
        )
        note = early_stopping_note(exp)
        self.title.value = (
            f"<b>{html.escape(exp.kind)} · {html.escape(exp.name)}</b> "
            f"<span style='color:{state_colour}'>{exp.state}</span>"
            + (f" <span style='color:#666'>· {html.escape(note)}</span>" if note else "")
        )
        self.progress.value = done
        self.progress.bar_style = "success" if exp.state is ExperimentState.COMPLETED else "info"
        # Only the states that happened (no "0 pruned" on a study that never prunes).
        self.counts.value = f"&nbsp;{done}/{exp.total or '?'} done" + "".join(
            f" · {c[s]} {s}" for s in SHOWN_COUNTS if c[s]
        )
        highlight = exp._highlight()
        best = f"<b>{html.escape(highlight)}</b> · " if highlight else ""
        link = (
            f" · <a href='{html.escape(exp.dashboard_link)}' target='_blank' style='{LINK_STYLE}'>Dask dashboard</a>"
            if exp.dashboard_link
            else ""
        )
        used = exp.compute()
        compute = f" · compute {used['steps']:,} steps, {used['trial_seconds']:,.0f} trial-s"
        if "saved" in used and exp.state != "running":
            compute += f" (<b>{used['saved']:.0%} of the steps saved</b> vs every trial to {exp.max_steps})"
        self.stats.value = f"{best}elapsed {format_duration(exp.elapsed)}{compute}{link}"
        # What this redraw reads of the record: the running trials and one page of the best, never every trial.
        running = record.running_records()
        ranked = record.ranked(limit=max(MAX_TABLE_ROWS, MAX_CURVES, PICKER_BEST))
        total = record.trial_count()
        now_running = {r.trial_id for r in running}
        self._recent.extend(sorted(self._running - now_running))
        self._running = now_running
        strips = self._usage.html(exp, running)
        if strips != self.usage.html:
            self.usage.html = strips
        self._curves.draw(_union(ranked[:MAX_CURVES], running))
        self._draw_extra(total)
        self._draw_table(ranked[:MAX_TABLE_ROWS], total)
        self._draw_log_picker(running, ranked[:PICKER_BEST], c[TrialState.FAILED.value])
        self._draw_log()

    def _draw_extra(self, total: int) -> None:
        """The run's own figure, when a trial has ended since it was drawn. exp.plot() reads every trial, so
        while the run goes on it is redrawn at most every FIGURE_EVERY_S, and less often when it takes longer
        than FIGURE_SHARE of that time (a run of 100,000 trials)."""
        if self.extra is None:
            return
        key = (total, self.exp.done, str(self.exp.state))
        running = self.exp.state is ExperimentState.RUNNING
        if key == self._extra_key or (running and time.monotonic() - self._extra_drawn < self._extra_wait):
            return
        began = time.monotonic()
        figure = self.exp.plot()
        with self.extra.batch_update():
            self.extra.data = []
            self.extra.add_traces(list(figure.data))
            self.extra.layout = figure.layout
        self._extra_key, self._extra_drawn = key, time.monotonic()
        self._extra_wait = max(FIGURE_EVERY_S, (self._extra_drawn - began) / FIGURE_SHARE)

    def _draw_table(self, records: list[TrialRecord], total: int) -> None:
        """The best MAX_TABLE_ROWS trials (``best_first``), and how many of how many it shows."""
        key = (total, tuple((r.trial_id, r.state, r.steps, r.resumed_from) for r in records))
        if key == self._table_key:
            return
        self._table_key = key
        self.table.html = trials_table(self.exp, records, total)

    def _draw_log_picker(
        self, running: list[TrialRecord], best: list[TrialRecord], failed_count: int
    ) -> None:
        """The picker lists a bounded set (running, the newest failed, the best, the last to end, and the one
        chosen), by trial id; unless the user chose one, it follows the newest failure, else the newest trial."""
        record = self.exp.record
        if self._failed[0] != failed_count:  # the failed trials read again only when there are more
            self._failed = (failed_count, record.failed_records()[-PICKER_FAILED:])
        failed = self._failed[1]
        listed = {r.trial_id: r for r in (*running[-PICKER_RUNNING:], *failed, *best)}
        for trial_id in [*self._recent, self.log_picker.value]:
            if trial_id is not None and trial_id not in listed:
                try:
                    listed[trial_id] = record.trial(trial_id)
                except KeyError:
                    pass
        options = [(f"trial {r.trial_id} · {r.state}", r.trial_id) for r in sorted(listed.values(), key=_id)]
        follow = self.log_picker.value
        if not self._log_choice_by_user and listed:
            follow = failed[-1].trial_id if failed else max(listed)
        self._picking = True
        try:
            if options != list(self.log_picker.options):
                self.log_picker.options = options
            if self.log_picker.value != follow:
                self.log_picker.value = follow
        finally:
            self._picking = False

    def _nothing(self, trial_id) -> str:
        if trial_id is None:
            return "(no trial yet)"
        running = self.exp.record.trial(trial_id).state is TrialState.RUNNING
        return "(no output yet)" if running else "(this trial printed nothing)"

    def _draw_log(self) -> None:
        trial_id = self.log_picker.value
        text = self.exp.logs(trial_id) if trial_id is not None else ""
        if len(text) > MAX_LOG_CHARS:
            text = "…" + text[-MAX_LOG_CHARS:]
        value = f"<pre style='font-size:12px;margin:0'>{html.escape(text or self._nothing(trial_id))}</pre>"
        if value != self.log_text.html:
            self.log_text.html = value


def _id(rec: TrialRecord) -> int:
    return rec.trial_id


def _union(*groups: list[TrialRecord]) -> list[TrialRecord]:
    """The trials of ``groups``, each once, in the order first met."""
    return list({r.trial_id: r for group in groups for r in group}.values())
