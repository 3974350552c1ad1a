"""Issue 44: the views of a run of thousands of trials read pages and counts of its record, never every trial.

The records are real InMemoryRecords filled through their TrialSink methods, as the trial loop fills them. One
that refuses ``trial_records()`` to any caller outside the store (its own aggregates may read it until they are
kept incrementally) shows that a redraw, the status line and ``compute()`` walk no trial list.
"""

import io
import sys

import pytest

import jupyter_dist as jd
from jupyter_dist.experiment._plots import CURVE_TRACES, experiment_figure
from jupyter_dist.protocol import ErrorKind, Objective, Outcome, ReportBatch, TrialState
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.widgets import TextView
from jupyter_dist.widgets._live import (
    MAX_CURVES,
    MAX_TABLE_ROWS,
    PICKER_BEST,
    PICKER_FAILED,
    PICKER_RECENT,
    PICKER_RUNNING,
    LiveView,
)

ENDED = 3000
RUNNING = 5


class NoWalk(InMemoryRecord):
    """A record whose every-trial list only the store itself may read (a view calling it fails the test)."""

    walks_allowed = True

    def trial_records(self):
        caller = sys._getframe(1).f_code.co_filename
        if not self.walks_allowed and "/jupyter_dist/store/" not in caller.replace("\\", "/"):
            raise AssertionError(f"trial_records() read every trial, from {caller}")
        return super().trial_records()


def value_of(trial_id):
    return (trial_id * 7919 % 1000) / 1000  # a different value per trial, in no order of their ids


def start(record, trial_id, queued=False):
    record.trial_started(trial_id, {"lr": trial_id / 1e4, "path": "/data"}, {}, queued=queued)
    if not queued:
        rows = [[step, {"acc": value_of(trial_id) * (step + 1) / 4}, 0.0] for step in range(4)]
        record.reports_arrived(ReportBatch(trial_id, "a", rows))


def finish(record, trial_id, state=TrialState.COMPLETED, error_kind=None):
    record.trial_finished(
        Outcome(
            trial_id,
            "a",
            state,
            steps=4,
            duration=2.0,
            value=value_of(trial_id) if state is TrialState.COMPLETED else None,
            error="ValueError: diverged" if state is TrialState.FAILED else None,
            error_kind=error_kind,
        )
    )


def many_trials(ended=ENDED, running=RUNNING, max_steps=10):
    """``ended`` trials ended (one in 100 failed, every 1000th of those out of memory), then ``running``
    running, the last of them queued."""
    record = NoWalk(ExperimentDefinition("hpo", "big", Objective("acc"), max_steps=max_steps))
    for trial_id in range(ended):
        start(record, trial_id)
        if trial_id % 100 == 3:
            memory = ErrorKind.MEMORY if trial_id % 1000 == 3 else None
            finish(record, trial_id, TrialState.FAILED, memory)
        else:
            finish(record, trial_id)
    for trial_id in range(ended, ended + running):
        start(record, trial_id, queued=trial_id == ended + running - 1)
    return record


def curve_ids(view):
    return {int(t.name.split()[-1]) for t in view.figure.data}


def best_ids(record, n):
    return [r.trial_id for r in record.ranked(limit=n)]


def test_the_live_view_of_thousands_of_trials_draws_the_best_and_the_running_ones():
    record = many_trials()
    view = LiveView(jd.Experiment(record))
    record.walks_allowed = False
    view.draw()
    running = {r.trial_id for r in record.running_records() if r.curve_values}
    # the curves: the best MAX_CURVES trials and the running ones, not a trace per trial
    assert len(view.figure.data) <= MAX_CURVES + RUNNING
    assert curve_ids(view) == set(best_ids(record, MAX_CURVES)) | running
    # the table: the best MAX_TABLE_ROWS, best first, and how many of how many it shows
    assert view.table.html.count("<tr") == MAX_TABLE_ROWS + 1
    assert f"showing the best {MAX_TABLE_ROWS} of {ENDED + RUNNING:,} trials" in view.table.html
    first_row = view.table.html.split("<tr")[2]
    assert f"<td>{record.best().trial_id}</td>" in first_row
    # the output tab's picker: a bounded set, following the newest failure
    options = [trial_id for _, trial_id in view.log_picker.options]
    assert len(options) <= PICKER_RUNNING + PICKER_FAILED + PICKER_BEST + PICKER_RECENT + 1
    assert set(options) >= {r.trial_id for r in record.running_records()} | set(best_ids(record, PICKER_BEST))
    assert view.log_picker.value == record.failed_records()[-1].trial_id
    assert "ValueError: diverged" in view.log_text.html
    assert f"{ENDED}/? done" in view.counts.value and f"{ENDED // 100} failed" in view.counts.value


def test_a_trial_that_falls_out_of_the_best_gives_its_trace_to_one_that_comes_in():
    record = many_trials()
    view = LiveView(jd.Experiment(record))
    record.walks_allowed = False
    view.draw()
    before = len(view.figure.data)
    worst_shown = best_ids(record, MAX_CURVES)[-1]
    # a running trial ends the best of all, and another running one ends worst: one trace fewer in all
    newest = ENDED + RUNNING - 2
    record.trial_finished(Outcome(newest, "a", TrialState.COMPLETED, steps=4, duration=1.0, value=2.0))
    finish(record, ENDED, TrialState.PRUNED)
    for trial_id in range(ENDED + RUNNING, ENDED + RUNNING + 3):  # and three more begin
        start(record, trial_id)
    view.draw()
    running = {r.trial_id for r in record.running_records() if r.curve_values}
    assert curve_ids(view) == set(best_ids(record, MAX_CURVES)) | running
    assert newest in curve_ids(view) and worst_shown not in curve_ids(view) and ENDED not in curve_ids(view)
    assert len(view.figure.data) == before + 3 - 2  # one out of the best, one pruned; three begun
    assert len(curve_ids(view)) == len(view.figure.data)  # each trial once
    # the picker lists the trials seen to end since the last draw
    options = [trial_id for _, trial_id in view.log_picker.options]
    assert {newest, ENDED} <= set(options)


def test_the_status_line_and_compute_read_no_trial_list():
    record = many_trials()
    exp = jd.Experiment(record)
    records = record.trial_records()
    record.walks_allowed = False
    line = exp.status_line()
    assert line.startswith(f"hpo 'big' running: {ENDED}/? trials done · 4 running · 1 queued")
    assert f"{ENDED // 100} failed" in line
    # the trials that ran out of memory, by the parameter that differs between the trials (not the constant path)
    assert "3 trials ran out of memory (at lr=0.0003, 0.1003, 0.2003)" in line
    assert f"best acc={record.best().value:.4g} (trial {record.best().trial_id}" in line
    before = sum(r.seconds() or 0.0 for r in records)  # (the running trials' seconds grow meanwhile)
    used = exp.compute()
    after = sum(r.seconds() or 0.0 for r in records)
    # as summed over every trial
    assert used["steps"] == sum(r.steps for r in records)
    assert before <= used["trial_seconds"] <= after
    ended = [r for r in records if r.state.finished]
    assert used["saved"] == pytest.approx(1 - sum(min(r.steps, 10) for r in ended) / (len(ended) * 10))
    rows = exp._repr_html_().split("<tbody>")[1].split("<tr>")[1:]  # the ten best, best first
    first_cells = [int(row.split("</td>")[0].split("<td>")[1]) for row in rows]
    assert first_cells == best_ids(record, 10) and first_cells[0] == record.best().trial_id


def test_more_out_of_memory_trials_than_the_line_names_are_counted():
    record = NoWalk(ExperimentDefinition("hpo", "oom", Objective("acc")))
    for trial_id in range(8):
        start(record, trial_id)
        finish(record, trial_id, TrialState.FAILED, ErrorKind.MEMORY)
    record.walks_allowed = False
    line = jd.Experiment(record).status_line()
    assert "8 trials ran out of memory (at lr=0, 0.0001, 0.0002, 0.0003, 0.0004 and 3 more)" in line


def test_the_text_view_says_each_failure_once_without_reading_every_trial():
    record = many_trials(ended=500)
    out = io.StringIO()
    view = TextView(jd.Experiment(record), stream=out)
    record.walks_allowed = False
    view.draw()
    said = out.getvalue()
    assert said.count(" failed: ") == 5 and "trial 403 failed: ValueError: diverged" in said
    view.draw()
    assert out.getvalue() == said  # nothing new: nothing said again
    start(record, 600)
    finish(record, 600, TrialState.FAILED)
    view.draw()
    assert out.getvalue().count(" failed: ") == 6 and "trial 600 failed" in out.getvalue()


def test_a_figure_of_thousands_of_trials_draws_the_best_curves_and_the_others_as_one_trace():
    record = many_trials(ended=2500, running=0)
    figure = experiment_figure(record.definition, record.trial_records(), "big")
    curves = [t for t in figure.data if t.type in ("scatter", "scattergl") and t.xaxis == "x"]
    assert len(curves) == CURVE_TRACES + 1
    assert curves[0].name == f"{2500 - CURVE_TRACES:,} other trials"  # (the failed trials have curves too)
    assert {int(t.name.split()[-1]) for t in curves[1:]} == set(best_ids(record, CURVE_TRACES))
    (coordinates,) = [t for t in figure.data if t.type == "parcoords"]
    assert len(coordinates.dimensions[0].values) == 2000
    assert "parameters of the best 2,000 of 2,475 completed trials" in [
        a.text for a in figure.layout.annotations
    ]
