"""A store written by schema 2 (one row per report) or 1 is brought up to date when opened, and every reader sees
what it saw before: listings, load(), history, output, the metrics cursor a client paged with, and a resume."""

import math
import os
import sqlite3

import pytest
from schema_2_store import pages_2, write_schema_2

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist._stored import prior_run
from jupyter_dist.protocol import ExperimentState, Objective, ReportBatch
from jupyter_dist.search._study import objective_curves
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord, StoreReader, finite
from jupyter_dist.store._codec import dumps
from jupyter_dist.store._schema import SCHEMA_VERSION
from jupyter_dist.store._sqlite import Database

SPACE = {"lr": space.uniform(0.01, 0.3)}
PAGE = 7  # an odd size: pages start and end inside batches and inside chunks


def climb(lr=0.1):
    for step in range(4):
        jd.report(step=step, acc=lr * (step + 1), odd=math.nan if step == 1 else math.inf)
    print(f"climbing lr={lr:.3f}")
    return {"acc": lr * 4}


@pytest.fixture
def schema_2(run_hpo, tmp_path):
    """A schema-2 file holding two real runs whose reports interleave, and the runs as they ended in memory."""
    first = run_hpo(climb, SPACE, trials=5, metric="acc", store=False, name="first", seed=1, pruner=None)
    second = run_hpo(climb, SPACE, trials=3, metric="acc", store=False, name="second", seed=2, pruner=None)
    path = str(tmp_path / "schema-2.sqlite")
    write_schema_2(path, [first.record, second.record])
    return path, first, second


def _version(path: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_a_schema_2_store_loads_back_the_same_runs_and_serves_the_same_pages(schema_2):
    path, first, second = schema_2
    old_pages = {exp.id: pages_2(path, exp.id, PAGE) for exp in (first, second)}
    assert _version(path) == 2

    listing = jd.experiments(store=path)  # opening it migrates it
    assert _version(path) == SCHEMA_VERSION == 4
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "reports" not in tables and {"report_chunks", "utilization"} <= tables
    assert list(listing["name"]) == ["first", "second"] and list(listing["trials_done"]) == [5, 3]

    db = Database(path)
    reader = StoreReader(path)
    try:
        for exp in (first, second):
            loaded = jd.load(exp.name, store=path)
            assert loaded.history.equals(exp.history)  # NaN and inf too, in the same places
            assert len(loaded.history) == exp.reports * 2
            assert loaded.logs(0) == exp.logs(0) and "climbing lr=" in loaded.logs(0)
            assert loaded.utilization.empty  # sampled by no run of schema 2
            curves = [(r.curve_steps, r.curve_values) for r in loaded.trial_records()]
            assert curves == [(r.curve_steps, r.curve_values) for r in exp.trial_records()]
            assert db.report_count(exp.id) == exp.reports
            pages = old_pages[exp.id]
            assert len(pages) == math.ceil(exp.reports / PAGE)
            for since, rows in pages:  # every cursor a client was given means the same reports
                assert dumps(db.report_page(exp.id, since, PAGE)) == dumps(rows)
                served = reader.metrics_page(exp.id, since=since, limit=PAGE)
                assert served["rows"] == [finite(list(row[1:])) for row in rows]
                assert served["cursor"] == rows[-1][0]
            assert reader.metrics_page(exp.id, since=pages[-1][1][-1][0])["rows"] == []
    finally:
        db.close()


def test_a_schema_2_run_resumes_with_its_curves_and_the_cursor_goes_on_across_the_old_and_new_reports(
    run_hpo, schema_2
):
    path, first, second = schema_2
    old_pages = pages_2(path, first.id, PAGE)
    last_old = max(rows[-1][0] for _, rows in [*old_pages, *pages_2(path, second.id, PAGE)])
    # What a resume tells the search of the stored trials (their curves, as the pruner was given them), read
    # from the migrated file.
    prior = prior_run(path, "first", "hpo")
    assert _version(path) == SCHEMA_VERSION
    curves = objective_curves(prior, prior.trial_records())
    assert curves == {
        rec.trial_id: {s: rec.params["lr"] * (s + 1) for s in range(4)} for rec in first.trial_records()
    }
    exp = run_hpo(climb, SPACE, trials=7, metric="acc", name="first", resume=True, store=path, pruner=None)
    assert exp.id == first.id and exp.state == "completed" and len(exp.trials) == 7
    assert exp.trials.head(5).drop(columns=["duration"]).equals(first.trials.drop(columns=["duration"]))
    for trial in exp.study.trials[:5]:
        assert trial.intermediate_values == curves[trial.number]

    history = exp.history
    assert len(history) == 7 * 4 * 2
    assert history.head(len(first.history)).equals(first.history)
    db = Database(path)
    try:
        # a client that paged the old run to its end goes on with the new trials' reports, numbered after every
        # report of the old file
        new = db.report_page(first.id, old_pages[-1][1][-1][0], 1000)
        # (the two new trials run at once, on two workers: their reports interleave in arrival order)
        assert sorted(row[1] for row in new) == [5] * 4 + [6] * 4
        assert all(row[0] > last_old for row in new)
        everything = []
        since = 0
        while page := db.report_page(first.id, since, PAGE):
            everything += page
            since = page[-1][0]
        assert dumps(everything[: first.reports]) == dumps([row for _, rows in old_pages for row in rows])
        assert dumps(everything[first.reports :]) == dumps(new)
    finally:
        db.close()


def test_a_schema_1_store_is_brought_up_through_2_to_today(schema_2):
    path, first, _ = schema_2
    with sqlite3.connect(path) as conn:  # as the first 0.5 development versions wrote it
        conn.execute("DROP TABLE stop_requests")
        conn.execute("PRAGMA user_version=1")
    loaded = jd.load(first.id, store=path)
    assert loaded.best.value == first.best.value and loaded.history.equals(first.history)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM stop_requests").fetchone()[0] == 0


def test_a_migration_that_fails_leaves_the_file_as_it_was_and_says_why(schema_2):
    path, first, _ = schema_2
    with sqlite3.connect(path) as conn:  # a report no schema-2 writer could have written
        conn.execute("UPDATE reports SET metrics = 'not json' WHERE seq = 3")
    before = open(path, "rb").read()
    with pytest.raises(jd.StoreError, match="could not be brought up to date .store schema 2 to 4.") as err:
        jd.load(first.id, store=path)
    assert path in str(err.value) and "rolled back" in str(err.value)
    assert open(path, "rb").read() == before and _version(path) == 2


def test_a_migrated_store_gives_back_the_room_its_rows_took(tmp_path):
    """20,000 reports of one metric: ~2.4 MB as schema 2's rows, ~0.6 MB once migrated and compacted."""
    definition = ExperimentDefinition("hpo", "big", Objective("v"), {}, total=200)
    record = InMemoryRecord(definition)
    for trial in range(200):
        record.trial_started(trial, {}, {})
        rows = [[s, {"v": math.sqrt(trial + s)}, 1.7e9 + trial + s / 1e3] for s in range(100)]
        record.reports_arrived(ReportBatch(trial, "a", rows))
    record.finish(ExperimentState.COMPLETED)
    path = str(tmp_path / "big.sqlite")
    write_schema_2(path, [record])
    before = os.path.getsize(path)
    assert jd.load("big", store=path).reports == 20_000
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert os.path.getsize(path) < before / 3, (before, os.path.getsize(path))
