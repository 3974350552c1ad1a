"""The experiment store: runs recorded as they go, read back as they were, names, bad files, concurrent writers."""

import math
import multiprocessing
import os
import sqlite3
import threading
import time

import pytest
from waiting import wait_until

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import ExperimentState, Objective, TrialState
from jupyter_dist.store import (
    ExperimentDefinition,
    InMemoryRecord,
    Journal,
    TrialRecord,
    read_record,
    trial_summary,
)
from jupyter_dist.store._journal import LOG_CAP_BYTES


def train(lr=0.1, width=8):
    print(f"training lr={lr:.3f} width={width}")
    for step in range(3):
        jd.report(step=step, acc=lr * (step + 1) + width / 100)
    return {"acc": lr * 3 + width / 100}


SPACE = {"lr": space.uniform(0.01, 0.3), "width": space.choice([8, 16, 32])}


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "store.sqlite")


def test_a_run_is_recorded_as_it_ran_and_loads_back_the_same(run_hpo, store):
    exp = run_hpo(train, SPACE, trials=6, metric="acc", store=store)
    loaded = jd.load(exp.name, store=store)
    assert loaded.id == exp.id and loaded.name == exp.name == "train"
    assert loaded.state == "completed" and loaded.kind == "hpo" and loaded.mode == "max"
    assert loaded.best.value == exp.best.value and loaded.best.params == exp.best.params
    assert loaded.trials.drop(columns=["duration"]).equals(exp.trials.drop(columns=["duration"]))
    assert len(loaded.history) == len(exp.history) == 18
    assert list(loaded.history["value"]) == list(exp.history["value"])
    assert "training lr=" in loaded.logs(0)
    assert loaded.logs(0) == exp.logs(0)
    assert loaded.space == exp.space
    loaded.plot()  # the curves come back too

    listing = jd.experiments(store=store)
    row = listing.set_index("id").loc[exp.id]
    assert (row["name"], row["kind"], row["state"], row["trials_done"], row["trials_total"]) == (
        "train",
        "hpo",
        "completed",
        6,
        6,
    )
    assert row["best"] == exp.best.value
    assert jd.load(exp.id, store=store).name == "train"  # by id as well as by name


def test_a_rerun_gets_a_fresh_name_and_an_explicit_name_is_never_reused(run_hpo, store):
    names = [run_hpo(train, SPACE, trials=1, metric="acc", store=store).name for _ in range(3)]
    assert names == ["train", "train-2", "train-3"]
    run_hpo(train, SPACE, trials=1, metric="acc", store=store, name="sweep")
    with pytest.raises(jd.StoreError, match="'sweep' is already in the store"):
        run_hpo(train, SPACE, trials=1, metric="acc", store=store, name="sweep")
    exp = run_hpo(train, SPACE, trials=1, metric="acc", store=False)
    assert exp.state == "completed"
    assert list(jd.experiments(store=store)["name"]) == ["train", "train-2", "train-3", "sweep"]


def test_ablation_and_data_parallel_runs_load_back_with_their_summary_and_result(
    run_ablation, run_ddp, store
):
    def study(features=("a", "b"), use_b=True):
        score = 0.5 + 0.2 * ("a" in features) + 0.1 * ("b" in features) + 0.05 * use_b
        jd.report(step=0, score=score)
        return {"score": score}

    exp = run_ablation(study, features=["a", "b"], flags=["use_b"], metric="score", store=store)
    loaded = jd.load(exp.name, store=store)
    assert loaded.summary().equals(exp.summary())

    def fit(n=3):
        jd.report(step=0, loss=1.0 / n)
        return {"weights": [jd.rank()] * n}

    run = run_ddp(fit, workers=2, store=store, n=3)
    back = jd.load(run.name, store=store)
    assert back.result == run.result == {"weights": [0, 0, 0]}
    assert back.rank_results == [{"weights": [0, 0, 0]}, {"weights": [1, 1, 1]}]
    # and as text, for views that cannot unpickle (the lab extension, through the REST API)
    assert back.trial_records()[0].result_repr == "{'weights': [0, 0, 0]}"


def test_odd_metric_names_and_values_are_kept_exactly(run_hpo, store):
    name = 'acc"; DROP TABLE experiments; --'

    def odd(x=0.0):
        jd.report(step=0, **{name: float("nan"), "big": 1e308, "inf": float("inf")})
        return {name: x}

    exp = run_hpo(odd, {"x": space.uniform(0, 1)}, trials=2, metric=name, store=store, name="odd 'name' ✓")
    loaded = jd.load("odd 'name' ✓", store=store)
    assert loaded.best.value == exp.best.value
    rows = loaded.history
    assert math.isnan(rows[rows.metric == name]["value"].iloc[0])
    assert set(rows[rows.metric == "inf"]["value"]) == {math.inf}
    assert set(rows[rows.metric == "big"]["value"]) == {1e308}


@pytest.mark.parametrize(
    "content, says",
    [
        (b"this is somebody's notes, not a database\n" * 100, "not a jupyter_dist experiment store"),
        ("foreign", "database of something else"),
        ("newer", "written by a newer jupyter_dist"),
    ],
)
def test_a_file_that_is_not_our_store_is_refused_and_left_untouched(run_hpo, tmp_path, content, says):
    path = tmp_path / "store.sqlite"
    if content == "foreign":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE notes (text TEXT)")
            conn.execute("INSERT INTO notes VALUES ('keep me')")
    elif content == "newer":
        run_hpo(train, SPACE, trials=1, metric="acc", store=str(path))
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version=99")
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(jd.StoreError, match=says) as err:
        run_hpo(train, SPACE, trials=1, metric="acc", store=str(path))
    assert str(path) in str(err.value)
    assert path.read_bytes() == before
    with pytest.raises(jd.StoreError, match=says):
        jd.experiments(store=str(path))
    with pytest.raises(jd.StoreError, match=says):  # not "no experiment named ..."
        run_hpo(train, SPACE, trials=1, metric="acc", store=str(path), name="train", resume=True)


def _definition(name: str) -> ExperimentDefinition:
    return ExperimentDefinition("hpo", name, Objective("acc"), {}, total=50)


BATCHES, ROWS = 100, 50


def _write_many(path: str, name: str) -> None:
    journal = Journal(path, _definition(name), {}, name_given=True)
    for trial_id in range(BATCHES):
        rec = TrialRecord(trial_id, {"i": trial_id})
        journal.trial_changed(rec)
        journal.reports(trial_id, 0, [[step, {"acc": step / ROWS}, 0.0] for step in range(ROWS)])
        rec.state, rec.value = TrialState.COMPLETED, 1.0
        journal.trial_changed(rec)
    journal.close(ExperimentState.COMPLETED, None, 0.0)


def test_two_processes_writing_one_store_at_once_lose_nothing(store):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(store, f"writer-{i}")) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT sum(count) FROM report_chunks").fetchone()[0] == 2 * BATCHES * ROWS
        assert conn.execute("SELECT count(*) FROM trials").fetchone()[0] == 2 * BATCHES
    listing = jd.experiments(store=store)
    assert list(listing["state"]) == ["completed", "completed"]
    assert list(listing["trials_done"]) == [BATCHES, BATCHES]


def test_a_flood_of_output_is_capped_in_the_store_with_a_visible_mark(store):
    journal = Journal(store, _definition("chatty"), {}, name_given=True)
    rec = TrialRecord(0, {})
    journal.trial_changed(rec)
    line = "x" * 1023 + "\n"
    for _ in range(3 * LOG_CAP_BYTES // len(line)):
        journal.output(0, "stdout", line)
    rec.state = TrialState.COMPLETED
    journal.trial_changed(rec)
    journal.close(ExperimentState.COMPLETED, None, 0.0)
    record, _ = read_record(store, "chatty")
    logs = record.trial(0).logs
    assert LOG_CAP_BYTES <= len(logs) < LOG_CAP_BYTES + 4096
    assert logs.rstrip().endswith("the rest is not stored]")


def steady(lr=0.1):
    import time

    for step in range(40):
        jd.report(step=step, acc=lr * step)
        time.sleep(0.05)
    return {"acc": lr * 40}


def test_a_stored_run_keeps_its_reports_on_disk_not_in_the_kernel(run_hpo, store):
    exp = run_hpo(steady, {"lr": space.uniform(0.01, 0.3)}, trials=2, metric="acc", store=store, pruner=None)
    assert exp.record._batches == []  # nothing held per report: the history below comes from the file
    history = exp.history
    assert len(history) == exp.reports == 80
    assert sorted(history.groupby("trial_id")["step"].max()) == [39, 39]
    assert list(history["value"]) == list(jd.load(exp.id, store=store).history["value"])
    # The live curves are still there for the plots.
    assert [len(rec.curve_values) for rec in exp.trial_records()] == [40, 40]


def test_a_store_that_stops_taking_writes_loses_nothing_and_says_so(run_hpo, store, monkeypatch):
    """Another process holds the store's write lock for longer than a writer waits: the run goes on, its
    history stays whole (what did not reach the file is kept in memory) and its status says it is not stored."""
    from jupyter_dist.store import _sqlite

    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT_S", 0.3)
    release = threading.Event()

    def reports_on_disk() -> int:
        if not os.path.exists(store):
            return 0
        with sqlite3.connect(store) as conn:
            try:
                return conn.execute("SELECT coalesce(sum(count), 0) FROM report_chunks").fetchone()[0]
            except sqlite3.OperationalError:  # the writer has not made the tables yet, or holds the lock
                return 0

    def hold_the_lock():
        wait_until(reports_on_disk, 60, "the run's first reports on disk")  # so some did reach the file
        conn = sqlite3.connect(store, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        release.wait(30)
        conn.execute("COMMIT")
        conn.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        exp = run_hpo(
            steady, {"lr": space.uniform(0.01, 0.3)}, trials=4, metric="acc", store=store, pruner=None
        )
    finally:
        release.set()
        holder.join()
    assert exp.state == "completed"
    assert exp.record.store_problem and "database is locked" in exp.record.store_problem
    assert f"NOT STORED: writing to the store {store} failed" in exp.status_line()
    assert len(exp.history) == exp.reports == 160
    with sqlite3.connect(store) as conn:
        on_disk = conn.execute("SELECT coalesce(sum(count), 0) FROM report_chunks").fetchone()[0]
    assert 0 < on_disk < 160


def _queued_then_killed(path: str) -> None:
    """A run whose kernel dies while a trial waits on its worker: the trial's row is written, then the process
    ends without closing its journal."""
    journal = Journal(path, _definition("died-queued"), {}, name_given=True)
    journal.trial_changed(TrialRecord(0, {"i": 0}))
    journal.trial_changed(TrialRecord(1, {"i": 1}, queued=True))
    wait_until(lambda: len(_stored_trials(path, "died-queued")) == 2, 60, "both trials written")
    os._exit(0)


def _stored_trials(path: str, name: str) -> list[tuple[str, bool]]:
    """(state, queued) of each trial of experiment ``name`` as the store file holds it now."""
    stored, _ = read_record(path, name)
    return [(t.state, t.queued) for t in stored.trial_records()]


def test_a_queued_trial_reads_queued_while_its_run_lives_and_interrupted_once_it_is_gone(store):
    """The store keeps whether a running trial still waits on its worker, so the REST API shows it queued (with
    no time of its own); a run that is gone leaves it interrupted, never queued."""
    record = InMemoryRecord(
        _definition("alive-queued"), Journal(store, _definition("alive-queued"), {}, name_given=True)
    )
    record.trial_started(0, {"i": 0}, {})
    record.trial_started(1, {"i": 1}, {}, queued=True)
    wait_until(lambda: len(_stored_trials(store, "alive-queued")) == 2, 30, "both trials written")
    stored, _ = read_record(store, "alive-queued")
    assert [(t.state, t.queued) for t in stored.trial_records()] == [("running", False), ("running", True)]
    summary = trial_summary(stored.trial(1))
    assert summary["queued"] is True and summary["began"] is None
    record.trial_began(1)
    wait_until(lambda: _stored_trials(store, "alive-queued")[1] != ("running", True), 30, "trial 1 began")
    stored, _ = read_record(store, "alive-queued")
    began = trial_summary(stored.trial(1))
    assert began["queued"] is False and began["began"] == pytest.approx(time.time(), abs=5)
    record.finish(ExperimentState.STOPPED)

    process = multiprocessing.get_context("spawn").Process(target=_queued_then_killed, args=(store,))
    process.start()
    process.join(60)
    dead, _ = read_record(store, "died-queued")
    assert [(t.state, t.queued) for t in dead.trial_records()] == [("interrupted", False)] * 2


def test_logs_say_an_attempt_once_when_only_one_stream_had_output():
    """Each stream gets an "--- attempt N ---" line when a trial runs again; logs() leaves out a stream that has
    nothing else (a trial that printed to stdout only)."""
    header = "\n--- attempt 2 (the previous worker was lost) ---\n"
    rec = TrialRecord(0, {}, stdout=["epoch 0\n", header, "resumed\n"], stderr=[header])
    assert rec.logs.count("--- attempt 2") == 1 and "resumed" in rec.logs
    rec.stderr.append("Traceback: boom\n")
    assert rec.logs.count("--- attempt 2") == 2 and rec.logs.endswith("boom")  # stderr has its own story now


def prints_and_may_fail(x=0.0):
    import sys

    print("training", x)
    print("careful", x, file=sys.stderr)
    if x > 0.5:
        raise ValueError(f"x too large: {x}")
    return x


def run_and_load(run_hpo, store, fn):
    """``fn`` run at x = 0.2 and 0.9, stored, and the run as ``load()`` reads it back: its trials' reports and
    output not read yet."""
    exp = run_hpo(fn, {"x": space.choice([0.2, 0.9])}, trials=2, metric="x", sampler="grid", store=store)
    return exp, jd.load(exp.id, store=store)


def test_a_loaded_runs_logs_of_one_trial_read_that_trial_alone(run_hpo, store):
    """exp.logs(n) of a run read back from the store reads n's output, not every trial's reports and output
    first (a 100,000-trial run's first took 1.4 s): the same text as once everything is read, failures too."""
    exp, loaded = run_and_load(run_hpo, store, prints_and_may_fail)
    by_x = {rec.params["x"]: rec.trial_id for rec in exp.trial_records()}
    one_at_a_time = {x: loaded.logs(trial_id) for x, trial_id in by_x.items()}
    assert loaded.record._unread is not None  # nothing but those trials' output was read
    assert "training 0.2" in one_at_a_time[0.2] and "careful 0.2" in one_at_a_time[0.2]
    assert "training 0.9" not in one_at_a_time[0.2]
    assert "ValueError: x too large: 0.9" in one_at_a_time[0.9]
    loaded.record.load_details()
    assert {x: loaded.logs(trial_id) for x, trial_id in by_x.items()} == one_at_a_time
    assert one_at_a_time == {x: exp.logs(trial_id) for x, trial_id in by_x.items()}
    with pytest.raises(jd.JupyterDistError, match="has no trial 7"):
        jd.load(exp.id, store=store).logs(7)


def checkpoints_each_step(x=0.0):
    for step in range(3):
        jd.report(step=step, x=x + step)
        jd.checkpoint(step, {"x": x, "step": step})
    return x


def test_a_loaded_runs_checkpoints_are_found_without_reading_every_trials_reports(run_hpo, store):
    """exp.checkpoint() of a run read back from the store gives the live run's folders without reading every
    trial's reports and output first (a 100,000-trial run's took 1.4 s)."""
    exp, loaded = run_and_load(run_hpo, store, checkpoints_each_step)
    assert loaded.checkpoint() == exp.checkpoint() and exp.checkpoint().endswith("step-000000002")
    ids = [rec.trial_id for rec in exp.trial_records()]
    assert [loaded.checkpoint(i) for i in ids] == [exp.checkpoint(i) for i in ids]
    assert loaded.record._unread is not None  # no trial's reports or output were read
    with pytest.raises(jd.JupyterDistError, match="has no trial 7"):
        loaded.checkpoint(7)
