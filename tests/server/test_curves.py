"""GET .../curves: the learning curves of the trials a view names, thinned, in one answer, and the cursor it reads
on from; on a real Jupyter server (pytest-jupyter), over stores written by the run's own record and writer."""

import asyncio
import json
import sqlite3
import threading
import time

import pytest
import tornado.httpclient
from waiting import async_wait_until

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import ExperimentState, Objective, Outcome, ReportBatch, TrialState
from jupyter_dist.store import (
    CurvesPage,
    ExperimentDefinition,
    InMemoryRecord,
    Journal,
)

pytest_plugins = ["pytest_jupyter.jupyter_server"]

API = ("jupyter-dist", "api", "experiments")


@pytest.fixture
def jp_server_config(fresh_store):  # the store is chosen (environment) before the server starts
    return {"ServerApp": {"jpserver_extensions": {"jupyter_dist": True}}}


async def get(jp_fetch, *path, **params):
    response = await jp_fetch(*API, *path, params=params)
    return json.loads(response.body)


def recorded(store: str, name: str = "curves", trials: int = 0) -> InMemoryRecord:
    definition = ExperimentDefinition("hpo", name, Objective("acc"), {"x": space.uniform(0, 1)}, total=trials)
    return InMemoryRecord(definition, Journal(store, definition, {}, name_given=True))


def report(record: InMemoryRecord, trial_id: int, attempt: str, steps, value=lambda s: s / 10) -> None:
    record.reports_arrived(
        ReportBatch(trial_id, attempt, [[s, {"acc": value(s)}, time.time()] for s in steps])
    )


def reports_on_disk(store: str) -> int:
    """How many reports the store file holds now (its writer flushes every FLUSH_INTERVAL_S)."""
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT coalesce(sum(count), 0) FROM report_chunks").fetchone()[0]


def finished(record: InMemoryRecord, trial_id: int, attempt: str = "a", value: float = 1.0) -> None:
    outcome = Outcome(trial_id, attempt, TrialState.COMPLETED, returned={"acc": value})
    outcome.value = value
    record.trial_finished(outcome)


async def test_curves_of_the_trials_named_are_thinned_and_their_attempts_assembled(jp_fetch, fresh_store):
    record = recorded(fresh_store, trials=5)
    for trial_id in range(5):
        record.trial_started(trial_id, {"x": trial_id / 5}, {})
    report(record, 0, "a", range(1000))  # long: thinned
    report(record, 1, "a", range(10))
    report(record, 1, "b", range(4))  # its worker was lost: the new attempt starts over from step 0
    report(record, 2, "a", range(10))
    report(record, 2, "b", range(6, 9))  # resumed from its step-5 checkpoint: the curve goes on
    report(record, 3, "a", range(5), value=lambda s: float("nan") if s % 2 else s)  # NaN: no point
    report(record, 4, "a", range(5))
    for trial_id in range(5):
        finished(record, trial_id, "b" if trial_id in (1, 2) else "a")
    record.finish(ExperimentState.COMPLETED)
    experiment_id = record.definition.id

    page = await get(jp_fetch, experiment_id, "curves", trials="0-3", points="50")
    assert set(page) == set(CurvesPage.__annotations__)
    assert page["metric"] == "acc"
    curves = {trial_id: (attempt, steps, values) for trial_id, attempt, steps, values in page["trials"]}
    assert sorted(curves) == [0, 1, 2, 3]  # trial 4 was not named
    attempt, steps, values = curves[0]
    assert len(steps) == 50 and steps[0] == 0 and steps[-1] == 999  # its first and latest kept
    assert max(b - a for a, b in zip(steps, steps[1:], strict=False)) <= 21  # spread evenly over it
    assert values == [s / 10 for s in steps]
    assert curves[1] == (1, [0, 1, 2, 3], [0.0, 0.1, 0.2, 0.3])
    assert curves[2] == (1, [0, 1, 2, 3, 4, 5, 6, 7, 8], [s / 10 for s in range(9)])
    assert curves[3] == (0, [0, 2, 4], [0, 2, 4])

    # The cursor is the last report's: reading on from it finds nothing more of a finished run.
    rest = await get(jp_fetch, experiment_id, "metrics", since=str(page["cursor"]))
    assert rest["rows"] == [] and not rest["more"]
    everything = await get(jp_fetch, experiment_id, "curves", points="5000")
    assert len(everything["trials"]) == 5 and everything["cursor"] == page["cursor"]
    assert len(everything["trials"][0][2]) == 1000


async def test_the_curves_match_the_kernels_record_of_a_real_run(jp_fetch, run_hpo):
    def climbing(lr=0.1):
        for step in range(30):
            jd.report(step=step, acc=lr * step, loss=1 / (step + 1))
        return {"acc": lr * 30}

    exp = run_hpo(climbing, {"lr": space.uniform(0.01, 0.3)}, trials=4, metric="acc", pruner=None)
    page = await get(jp_fetch, exp.id, "curves", points="1000")
    served = {trial_id: (steps, values) for trial_id, _, steps, values in page["trials"]}
    kept = {rec.trial_id: (rec.curve_steps, rec.curve_values) for rec in exp.record.trial_records()}
    assert served == kept


async def test_a_running_experiment_reads_on_from_the_cursor_losing_and_doubling_nothing(
    jp_fetch, fresh_store
):
    record = recorded(fresh_store, "live", trials=3)
    try:
        for trial_id in range(3):
            record.trial_started(trial_id, {"x": trial_id / 3}, {})
            report(record, trial_id, "a", range(20))
        await async_wait_until(lambda: reports_on_disk(fresh_store) == 60, 30, "the 60 reports on disk")
        first = await get(jp_fetch, record.definition.id, "curves", trials="0-")
        assert [len(steps) for _, _, steps, _ in first["trials"]] == [20, 20, 20]
        for trial_id in range(3):
            report(record, trial_id, "a", range(20, 25))
        report(record, 2, "b", range(22, 24))  # its worker was lost: resumed from its step-21 checkpoint
        await async_wait_until(lambda: reports_on_disk(fresh_store) == 77, 30, "the 17 new reports on disk")
        later = await get(jp_fetch, record.definition.id, "metrics", since=str(first["cursor"]))
        assert sorted((row[0], row[1], row[2]) for row in later["rows"]) == sorted(
            [(t, 0, s) for t in range(3) for s in range(20, 25)] + [(2, 1, 22), (2, 1, 23)]
        )
        # The same, as curves: each trial's new points; trial 2's new attempt from its first step on.
        since = await get(jp_fetch, record.definition.id, "curves", since=str(first["cursor"]))
        assert since["cursor"] == later["cursor"]
        assert since["trials"] == [
            [0, 0, [20, 21, 22, 23, 24], [2.0, 2.1, 2.2, 2.3, 2.4]],
            [1, 0, [20, 21, 22, 23, 24], [2.0, 2.1, 2.2, 2.3, 2.4]],
            [2, 1, [20, 21, 22, 23], [2.0, 2.1, 2.2, 2.3]],
        ]
        nothing = await get(jp_fetch, record.definition.id, "curves", since=str(since["cursor"]))
        assert nothing == {"metric": "acc", "trials": [], "cursor": since["cursor"], "more": False}
    finally:
        record.finish(ExperimentState.STOPPED)


async def test_a_bad_selection_or_point_count_is_a_clear_400(jp_fetch, fresh_store):
    record = recorded(fresh_store)
    record.finish(ExperimentState.COMPLETED)
    for params, says in [
        ({"trials": "1,a"}, "trials='1,a': trial ids, ranges"),
        ({"trials": "3-1-"}, "like 3,17,40-59,9000-"),
        ({"points": "0"}, "0 < points <= 5000"),
        ({"points": "many"}, "points, since, limit: whole numbers"),
        ({"since": "-1"}, "since=-1: a cursor"),
    ]:
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch(*API, record.definition.id, "curves", params=params)
        assert err.value.code == 400 and says in json.loads(err.value.response.body)["message"], params
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch(*API, "20991231-235959-abcdef", "curves")
    assert err.value.code == 404


async def test_a_long_read_does_not_hold_up_the_servers_other_answers(jp_fetch, fresh_store, monkeypatch):
    """The store is read on the executor: while one read takes long (an experiment's importances: ~2 s at 10,000
    trials), the listing still answers, as every kernel's websocket goes on being served. The long read here
    waits until the listing has answered (at most 30 s): on the event loop it would hold the listing up until then,
    so the listing would only answer once the long read was over."""
    from jupyter_dist import search

    record = recorded(fresh_store, "wide", trials=20)
    for trial_id in range(20):
        x = (trial_id * 0.618) % 1
        record.trial_started(trial_id, {"x": x}, {})
        finished(record, trial_id, value=x * (1 - x))
    record.finish(ExperimentState.COMPLETED)
    listing_answered, began, over = threading.Event(), threading.Event(), threading.Event()
    importances_report = search.importances_report

    def long_read(stored):
        began.set()
        listing_answered.wait(timeout=30)
        over.set()
        return importances_report(stored)

    monkeypatch.setattr(search, "importances_report", long_read)
    slow = asyncio.ensure_future(jp_fetch(*API, record.definition.id, "importances"))
    await async_wait_until(began.is_set, 30, "the long read to begin")
    await jp_fetch(*API)
    answered_during_the_long_read = not over.is_set()
    listing_answered.set()
    await slow
    assert answered_during_the_long_read
