"""Reports on disk in chunks of batches (schema 3): numbered one by one across the file, read back from any cursor
as they were handed over, small on disk, and nothing lost that msgpack cannot hold."""

import gc
import math
import os

import pytest

from jupyter_dist.protocol import ExperimentState, Objective
from jupyter_dist.store import ExperimentDefinition, Journal, _chunks
from jupyter_dist.store._codec import dumps
from jupyter_dist.store._sqlite import Database


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "store.sqlite")


def _experiment(path: str, name: str) -> str:
    definition = ExperimentDefinition("hpo", name, Objective("acc"), {}, total=3)
    journal = Journal(path, definition, {}, name_given=True)
    journal.close(ExperimentState.COMPLETED, None, 0.0)
    return journal.experiment_id


def test_every_cursor_reads_the_reports_after_it_whatever_the_page_and_chunk(store, monkeypatch):
    """Two runs write in turns, batches of odd sizes, chunks of at most 5 reports: a page may start and end
    inside a batch and inside a chunk, and the numbers are the file's arrival order."""
    monkeypatch.setattr(_chunks, "CHUNK_REPORTS", 5)
    ids = [_experiment(store, "a"), _experiment(store, "b")]
    expected: dict[str, list[tuple]] = {i: [] for i in ids}
    seq = 0
    db = Database(store)
    try:
        for flush in range(3):
            for experiment_id in ids:
                batches = []
                for k, size in enumerate([3, 1, 7, 2, 5, 1, 1, 4]):
                    rows = [
                        [s, {"m": s + flush / 10, "nan": math.nan}, 1000.0 + seq + s] for s in range(size)
                    ]
                    batches.append((k % 3, flush, rows))
                    for step, metrics, sent_at in rows:
                        seq += 1
                        expected[experiment_id].append((seq, k % 3, flush, step, sent_at, metrics))
                db.write_batch(experiment_id, {}, batches, [], None)
        for experiment_id, reports in expected.items():
            assert db.report_count(experiment_id) == len(reports) == 72
            for since in [0, *(r[0] for r in reports)]:
                after = [r for r in reports if r[0] > since]
                for limit in (1, 4, 1000):
                    assert dumps(db.report_page(experiment_id, since, limit)) == dumps(after[:limit])
                batches = list(db.report_batches(experiment_id, since))
                assert dumps([r for _, _, _, rows in batches for r in rows]) == dumps(
                    [[r[3], r[5], r[4]] for r in after]
                )
                # each batch's cursor is its last report's number, and it holds that trial's and attempt's reports
                by_seq = {r[0]: r for r in reports}
                for cursor, trial_id, attempt, rows in batches:
                    held = [by_seq[n] for n in range(cursor - len(rows) + 1, cursor + 1)]
                    assert {(r[1], r[2]) for r in held} == {(trial_id, attempt)}
                    assert dumps([[r[3], r[5], r[4]] for r in held]) == dumps(rows)
            assert dumps(list(db.reports(experiment_id))) == dumps([r[1:] for r in reports])
    finally:
        db.close()


def test_a_report_msgpack_cannot_hold_is_stored_all_the_same(store):
    """An int past 64 bits or a name that is not UTF-8 cannot be msgpack: its chunk is JSON text instead."""
    definition = ExperimentDefinition("hpo", "odd", Objective("acc"), {}, total=1)
    journal = Journal(store, definition, {}, name_given=True)
    rows = [[2**70, {"acc": 1.0}, 1.5], [3, {"\ud800": -math.inf, "acc": math.nan}, 2.5]]
    journal.reports(0, 0, rows)
    journal.close(ExperimentState.COMPLETED, None, 0.0)
    db = Database(store)
    try:
        assert dumps([rows]) == dumps([stored for _, _, _, stored in db.report_batches(definition.id)])
    finally:
        db.close()


def test_a_report_takes_a_fraction_of_the_bytes_it_took_as_a_row(store):
    """Schema 2 took ~110 bytes a report of one metric (bench_scale: 110 MB for 1M); chunks take ~27."""
    experiment_id = _experiment(store, "small")
    db = Database(store)
    try:
        for flush in range(20):
            batches = [
                (trial, 0, [[s, {"v": math.sqrt(s + trial)}, 1.7e9 + flush + s / 1e3] for s in range(100)])
                for trial in range(10 * flush, 10 * flush + 10)
            ]
            db.write_batch(experiment_id, {}, batches, [], None)
        db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    per_report = os.path.getsize(store) / 20_000
    assert per_report < 35, per_report


@pytest.mark.parametrize("collecting", [True, False])
def test_reading_in_bulk_pauses_the_garbage_collector_and_leaves_it_as_it_was(store, collecting, monkeypatch):
    experiment_id = _experiment(store, "gc")
    db = Database(store)
    try:
        db.write_batch(experiment_id, {}, [(0, 0, [[0, {"v": 1.0}, 0.0]])], [], None)
        decode = _chunks.unpack_reports
        seen = []  # whether the collector ran while each chunk was decoded
        monkeypatch.setattr(
            _chunks, "unpack_reports", lambda blob: seen.append(gc.isenabled()) or decode(blob)
        )
        if not collecting:
            gc.disable()
        assert len(db.report_batches(experiment_id)) == len(db.report_page(experiment_id, 0, 10)) == 1
        assert seen == [False, False] and gc.isenabled() is collecting
    finally:
        gc.enable()
        db.close()
