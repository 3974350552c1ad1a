"""exp.history's columns (store/_report_columns.py) hold exactly the rows report_rows() yielded, in its order, from
each of their three sources: a stored run's journal, a store read back, a run's batches in memory."""

import math

import numpy as np
import pandas as pd
import pytest

from jupyter_dist.experiment._frames import history_frame
from jupyter_dist.protocol import ExperimentState, Objective
from jupyter_dist.store import ExperimentDefinition, Journal, _chunks, _report_columns
from jupyter_dist.store._report_columns import (
    COLUMNS,
    columns_from_batches,
    columns_from_journal,
    columns_from_store,
)
from jupyter_dist.store._sqlite import Database

BIG = 2**70  # a step msgpack cannot hold: its chunk is stored as JSON text


def _rows(batches) -> list[tuple]:
    """What InMemoryRecord.report_rows() yields of ``batches``."""
    return [
        (trial_id, attempt, step, name, value, sent_at)
        for trial_id, attempt, rows in batches
        for step, metrics, sent_at in rows
        for name, value in metrics.items()
    ]


def _frame_of_rows(rows: list[tuple]) -> pd.DataFrame:
    """exp.history as it was made from report_rows()' tuples, one by one."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["time"] = pd.to_datetime(frame["time"], unit="s").astype("datetime64[ns]")
    return frame


def _as_rows(columns: dict) -> list[tuple]:
    return list(zip(*(columns[c].tolist() for c in COLUMNS), strict=True))


def _same(columns: dict, rows: list[tuple]) -> None:
    assert list(columns) == list(COLUMNS)
    assert repr(_as_rows(columns)) == repr(rows)  # repr: NaN equals NaN
    assert len({len(c) for c in columns.values()}) == 1


def _batches(flush: int) -> list[tuple]:
    """Two trials, each in its second attempt too; metrics missing in some reports, given in varying order, one
    report of several metrics, NaN and infinities; batches of 1 to 4 reports."""
    out = []
    for trial_id in (3, 1):
        for attempt in (0, 1):
            rows = []
            for step in range(1 + (trial_id + attempt + flush) % 4):
                metrics = {"loss": 1.0 / (step + 1)}
                if step % 2:
                    metrics["acc"] = math.nan if step == 3 else 0.5 + step / 10
                if trial_id == 1 and step == 0:
                    metrics = {"acc": math.inf, "loss": -math.inf, f"extra_{flush}": 2.0}
                rows.append([step + 10 * flush, metrics, 1_700_000_000.0 + flush + step / 1000])
            out.append((trial_id, attempt, rows))
    return out


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A stored run, open: its writer flushes every ~0.5 s; chunks of at most 5 reports."""
    monkeypatch.setattr(_chunks, "CHUNK_REPORTS", 5)
    definition = ExperimentDefinition("hpo", "cols", Objective("loss"), {}, total=2)
    journal = Journal(str(tmp_path / "store.sqlite"), definition, {}, name_given=True)
    yield journal
    journal.close(ExperimentState.COMPLETED, None, 0.0)


@pytest.mark.parametrize("group", [1, 3, _report_columns.GROUP_REPORTS])
def test_a_stored_runs_columns_are_its_report_rows(run, monkeypatch, group):
    """Written and pending batches alike (the writer may flush between the two reads: together they are every
    batch either way), grouped at any size."""
    monkeypatch.setattr(_report_columns, "GROUP_REPORTS", group)
    handed = []
    for flush in range(4):
        for trial_id, attempt, rows in _batches(flush):
            run.reports(trial_id, attempt, rows)
            handed.append((trial_id, attempt, rows))
        if flush == 2:
            run._wake.set()  # some written now, the rest pending
    _same(columns_from_journal(run), _rows(handed))
    assert repr(_rows(run.batches_so_far())) == repr(_rows(handed))


def test_a_stored_experiment_read_back_and_batches_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(_chunks, "CHUNK_REPORTS", 5)
    monkeypatch.setattr(_report_columns, "GROUP_REPORTS", 4)
    path = str(tmp_path / "store.sqlite")
    definition = ExperimentDefinition("hpo", "back", Objective("loss"), {}, total=2)
    journal = Journal(path, definition, {}, name_given=True)
    handed = [b for flush in range(3) for b in _batches(flush)]
    for batch in handed:
        journal.reports(*batch)
    journal.close(ExperimentState.COMPLETED, None, 1.0)
    _same(columns_from_store(path, definition.id), _rows(handed))
    _same(columns_from_batches(handed), _rows(handed))
    # a loaded record keeps only the reports of the trials it has a row of
    _same(columns_from_store(path, definition.id, {3}), _rows([b for b in handed if b[0] == 3]))
    _same(columns_from_store(path, "no-such-id"), [])


def test_history_frame_of_columns_is_the_frame_of_rows():
    handed = [b for flush in range(3) for b in _batches(flush)]
    columns = columns_from_batches(handed)
    assert columns["trial_id"].dtype == columns["step"].dtype == np.int64
    assert columns["value"].dtype == columns["time"].dtype == np.float64
    new, old = history_frame(columns), _frame_of_rows(_rows(handed))
    pd.testing.assert_frame_equal(new, old)
    assert list(new.columns) == ["trial_id", "attempt", "step", "metric", "value", "time"]
    assert new["time"].dtype == "datetime64[ns]"


def test_no_reports_give_empty_columns_and_frame():
    columns = columns_from_batches([])
    assert list(columns) == list(COLUMNS) and all(len(c) == 0 for c in columns.values())
    frame = history_frame(columns)
    assert list(frame.columns) == list(COLUMNS) and frame.empty and frame["time"].dtype == "datetime64[ns]"


def test_what_numpy_cannot_hold_stays_as_python_objects(tmp_path, monkeypatch):
    """A step past 64 bits (its chunk JSON text): that column becomes objects, every value kept exactly."""
    monkeypatch.setattr(_chunks, "CHUNK_REPORTS", 2)
    monkeypatch.setattr(_report_columns, "GROUP_REPORTS", 2)
    path = str(tmp_path / "store.sqlite")
    definition = ExperimentDefinition("hpo", "big", Objective("loss"), {}, total=1)
    journal = Journal(path, definition, {}, name_given=True)
    journal.close(ExperimentState.COMPLETED, None, 1.0)
    handed = [(0, 0, [[s, {"loss": 0.5}, 1.0]]) for s in range(4)] + [(0, 0, [[BIG, {"loss": 0.25}, 2.0]])]
    db = Database(path)
    try:
        db.write_batch(definition.id, {}, handed, [], None)
    finally:
        db.close()
    columns = columns_from_store(path, definition.id)
    _same(columns, _rows(handed))
    assert columns["step"].dtype == object and columns["value"].dtype == np.float64
    pd.testing.assert_frame_equal(history_frame(columns), _frame_of_rows(_rows(handed)))
