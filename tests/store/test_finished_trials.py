"""Issue 44: an ended trial lives in the record's columns (store/_finished.py), not as a TrialRecord, and reads back
as the record it was when it ended; what the views and tables read of the columns is what the records would say.

Records are real InMemoryRecords filled through their TrialSink methods, as the trial loop fills them; the naive
answers to compare with are ExperimentRecord's own, which walk ``trial_records()``.
"""

import copy
import gc
import math
import tracemalloc

import pandas as pd
import pytest

import jupyter_dist as jd
from jupyter_dist.experiment._frames import trials_frame
from jupyter_dist.protocol import (
    Direction,
    ErrorKind,
    ExperimentState,
    LogLine,
    Objective,
    Outcome,
    ReportBatch,
    TrialState,
)
from jupyter_dist.store import ExperimentDefinition, ExperimentRecord, InMemoryRecord, Journal, TrialRecord


def _outcome(trial_id, state, value=None, **kw):
    return Outcome(
        trial_id, "a", state, steps=kw.pop("steps", 3), duration=kw.pop("duration", 0.5), value=value, **kw
    )


def varied_record(journal=None, direction=Direction.MIN):
    """Trials of every shape: floats, whole numbers, strings and a missing parameter (define-by-run), failed ones
    with tracebacks (one out of memory), pruned and stopped ones, labels, output, a seed past 64 bits, ties, a
    non-finite value, and three left running (one queued)."""
    definition = ExperimentDefinition("hpo", "shapes", Objective("loss", direction), max_steps=5)
    record = InMemoryRecord(journal.definition if journal else definition, journal)
    ended: dict[int, TrialRecord] = {}
    for trial_id in range(40):
        params = {"lr": trial_id / 100, "layers": trial_id % 3 + 1, "act": ["relu", "tanh"][trial_id % 2]}
        if trial_id % 5 == 0:
            params["dropout"] = 0.1 * trial_id  # only some trials suggest it
        labels = {"component": f"c{trial_id % 4}"} if trial_id % 7 == 0 else {}
        seed = 2**70 + trial_id if trial_id == 9 else (None if trial_id % 6 == 0 else 1000 + trial_id)
        record.trial_started(trial_id, params, labels, seed=seed)
        record.trial_began(trial_id)
        rows = [[step, {"loss": 1.0 / (trial_id + step + 1), "acc": step / 3}, 1.0] for step in range(3)]
        record.reports_arrived(ReportBatch(trial_id, "a", rows))
        if trial_id % 8 == 1:
            record.log_arrived(LogLine(trial_id, "a", "stdout", f"trial {trial_id} says hello\n"))
        if trial_id >= 37:
            continue  # running
        if trial_id % 10 == 3:
            kind = ErrorKind.MEMORY if trial_id == 13 else None
            outcome = _outcome(trial_id, TrialState.FAILED, error="Traceback: boom", error_kind=kind)
        elif trial_id % 10 == 4:
            outcome = _outcome(trial_id, TrialState.PRUNED, value=0.9, steps=2)
        elif trial_id == 25:
            outcome = _outcome(trial_id, TrialState.STOPPED, duration=None)
        else:
            value = math.inf if trial_id == 11 else round(1.0 / (trial_id % 9 + 2), 3)  # ties among them
            outcome = _outcome(trial_id, TrialState.COMPLETED, value=value, last={"loss": value, "acc": 0.5})
        ended[trial_id] = copy.deepcopy(record.trial_finished(outcome))
    record.trial_started(40, {"lr": 0.4, "layers": 1, "act": "relu"}, {}, queued=True)
    return record, ended


def test_an_ended_trial_is_kept_as_columns_and_reads_back_as_it_ended():
    record, ended = varied_record()
    assert sorted(record._trials) == [37, 38, 39, 40]  # only the running ones are records
    for trial_id, was in ended.items():
        assert vars(record.trial(trial_id)) == vars(was), trial_id
    assert [r.trial_id for r in record.trial_records()] == list(range(41))
    assert record.trial(9).seed == 2**70 + 9
    assert record.trial(13).error_kind is ErrorKind.MEMORY


@pytest.mark.parametrize("direction", [Direction.MIN, Direction.MAX])
def test_what_the_views_read_of_the_columns_is_what_the_records_say(direction):
    record, _ = varied_record(direction=direction)
    naive = ExperimentRecord  # the base class's answers walk every trial's record
    assert record.counts() == naive.counts(record)
    assert record.trial_count() == naive.trial_count(record) == 41
    assert record.ended_totals() == naive.ended_totals(record)
    assert record.out_of_memory(1)[0] == naive.out_of_memory(record, 1)[0] == 1
    assert [vars(r) for r in record.out_of_memory(1)[1]] == [
        vars(r) for r in naive.out_of_memory(record, 1)[1]
    ]
    assert record.varied_params() == naive.varied_params(record)
    assert record.param_names() == naive.param_names(record)
    assert [r.trial_id for r in record.running_records()] == [37, 38, 39, 40]
    assert [r.trial_id for r in record.failed_records()] == [3, 13, 23, 33]
    for state in (None, TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED, TrialState.RUNNING):
        for offset, limit in ((0, None), (0, 5), (3, 10), (30, 20)):
            got = [r.trial_id for r in record.ranked(offset, limit, state)]
            assert got == [r.trial_id for r in naive.ranked(record, offset, limit, state)], (
                state,
                offset,
                limit,
            )


def test_the_trials_table_from_the_columns_is_the_one_from_the_records():
    record, _ = varied_record()
    exp = jd.Experiment(record)
    expected = trials_frame(record.trial_records(), record.definition.objective)
    pd.testing.assert_frame_equal(exp.trials, expected)


def test_a_trial_taken_back_runs_again_and_ends_again_in_its_row():
    """A resumed run or exp.extend starts an ended trial again: it leaves the columns, and its new end replaces
    its row (counted once)."""
    record, _ = varied_record()
    record.trial_started(5, {"lr": 0.05, "layers": 3, "act": "tanh", "dropout": 0.5}, {})
    assert 5 in record._trials and record.trial_count() == 41
    assert record.counts()["running"] == 4
    record.trial_finished(_outcome(5, TrialState.COMPLETED, value=0.001))
    assert record.trial(5).value == 0.001 and record.best().trial_id == 5
    assert record.counts() == ExperimentRecord.counts(record)
    assert [r.trial_id for r in record.ranked(limit=1)] == [5]


def test_the_runs_end_moves_its_interrupted_trials_into_the_columns():
    record, _ = varied_record()
    record.finish(ExperimentState.FAILED, "the cluster went away")
    assert record._trials == {}
    assert record.counts()["interrupted"] == 4
    assert record.trial(38).state is TrialState.INTERRUPTED and record.trial(38).duration is not None


def test_what_arrives_for_a_trial_after_it_ended_is_kept(tmp_path):
    store = str(tmp_path / "s.sqlite")
    definition = ExperimentDefinition("hpo", "late", Objective("loss"))
    record, _ = varied_record(Journal(store, definition, {}, name_given=True))
    before = record.report_count()
    record.reports_arrived(ReportBatch(1, "a", [[7, {"loss": 0.25}, 2.0]]))
    record.log_arrived(LogLine(1, "a", "stderr", "a warning after the end\n"))
    record.finish(ExperimentState.COMPLETED)
    assert record.report_count() == before + 1
    assert "a warning after the end" in record.trial(1).logs
    loaded = jd.load("late", store=store)
    history = loaded.history
    assert ((history.trial_id == 1) & (history.step == 7)).sum() == 1
    assert "a warning after the end" in loaded.logs(1)


def test_a_stored_run_reads_back_the_same_from_its_columns(tmp_path):
    store = str(tmp_path / "s.sqlite")
    definition = ExperimentDefinition("hpo", "back", Objective("loss"))
    record, _ = varied_record(Journal(store, definition, {}, name_given=True))
    record.finish(ExperimentState.COMPLETED)
    live = jd.Experiment(record)
    loaded = jd.load("back", store=store)
    pd.testing.assert_frame_equal(loaded.trials, live.trials)
    assert loaded.best.trial_id == live.best.trial_id
    for trial_id in (1, 9, 13, 25, 38):
        was, now = vars(record.trial(trial_id)), vars(loaded.record.trial(trial_id))
        assert now == was, trial_id


def test_an_ended_trial_costs_the_kernel_no_record_object():
    """Ended trials of a plain search: no TrialRecord each (1.4 KB), a row of columns of a few hundred bytes."""
    definition = ExperimentDefinition("hpo", "many", Objective("loss"))
    record = InMemoryRecord(definition)
    n = 5000

    def run(first):
        for trial_id in range(first, first + n):
            record.trial_started(trial_id, {"lr": trial_id * 1e-4, "layers": trial_id % 4, "act": "relu"}, {})
            record.trial_finished(
                _outcome(trial_id, TrialState.COMPLETED, value=trial_id * 0.5, last={"loss": 1.0})
            )

    run(0)  # the columns' first growth
    gc.collect()
    before = {id(o) for o in gc.get_objects() if type(o) is TrialRecord}  # other tests' may be alive too
    tracemalloc.start()
    try:
        run(n)
        gc.collect()
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown / n < 400, f"{grown / n:.0f} bytes per ended trial"
    alive = [o for o in gc.get_objects() if type(o) is TrialRecord and id(o) not in before]
    assert [rec.trial_id for rec in alive] == [record.best().trial_id]  # the best one, kept as a record
