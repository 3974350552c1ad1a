"""The jupyter-server extension's REST API, on a real Jupyter server (pytest-jupyter), over a store written by
real experiments."""

import asyncio
import json
import re
import threading
import time

import pytest
import tornado.httpclient

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import ExperimentState, Objective
from jupyter_dist.store import (
    FLUSH_INTERVAL_S,
    ExperimentDefinition,
    ExperimentSummary,
    InMemoryRecord,
    Journal,
    MetricsPage,
    NotInStore,
    NotRunning,
    StoreReader,
    TrialLogs,
    experiment_detail,
)

pytest_plugins = ["pytest_jupyter.jupyter_server"]

API = ("jupyter-dist", "api", "experiments")


@pytest.fixture
def jp_server_config(fresh_store):  # the store is chosen (environment) before the server starts
    return {"ServerApp": {"jpserver_extensions": {"jupyter_dist": True}}}


def noisy(lr=0.1, steps=3):
    print(f"lr={lr}")
    for step in range(steps):
        jd.report(step=step, acc=lr * (step + 1), loss=float("nan"))
    return {"acc": lr * steps}


async def get(jp_fetch, *path, **params):
    response = await jp_fetch(*API, *path, params=params)
    return json.loads(response.body)


async def test_experiments_their_trials_metrics_and_logs_are_served(jp_fetch, run_hpo):
    exp = run_hpo(noisy, {"lr": space.uniform(0.01, 0.3)}, trials=3, metric="acc", pruner=None)
    listing = await get(jp_fetch)
    assert listing["total"] == 1
    assert listing["experiments"][0]["id"] == exp.id and listing["experiments"][0]["state"] == "completed"

    one = await get(jp_fetch, exp.id)
    assert one["name"] == exp.name and one["definition"]["metric"] == "acc"
    assert [t["state"] for t in one["trials"]] == ["completed"] * 3
    assert one["best"]["value"] == exp.best.value and one["best"]["params"] == exp.best.params
    assert "def noisy" in one["about"]["source"]

    first = await get(jp_fetch, exp.id, "metrics", limit="4")
    assert len(first["rows"]) == 4 and first["more"]
    assert first["rows"][0][4]["loss"] is None  # NaN: JSON has none
    rest = await get(jp_fetch, exp.id, "metrics", since=str(first["cursor"]))
    assert len(first["rows"]) + len(rest["rows"]) == 9 and not rest["more"]

    logs = await get(jp_fetch, exp.id, "logs", "0")
    assert logs["stdout"].startswith("lr=")

    # Each answer has the keys its wire type declares (labextension/src/wire.ts is generated from them).
    assert set(listing["experiments"][0]) == set(ExperimentSummary.__annotations__)
    assert set(first) == set(MetricsPage.__annotations__) and set(logs) == set(TrialLogs.__annotations__)
    assert set(one) == set(experiment_detail(exp.record)) | {"about"}


async def test_a_running_experiment_is_read_as_it_goes(jp_fetch, run_hpo):
    def slowly(x=0.0):
        import time

        for step in range(40):
            time.sleep(0.05)
            jd.report(step=step, v=x + step)
        return {"v": x}

    done = []
    runner = threading.Thread(
        target=lambda: done.append(
            run_hpo(slowly, {"x": space.uniform(0, 1)}, trials=2, metric="v", name="live")
        )
    )
    runner.start()
    try:
        seen, cursor, states = 0, 0, set()
        deadline = time.monotonic() + 60
        while runner.is_alive() and time.monotonic() < deadline:
            listing = await get(jp_fetch)
            if listing["total"]:
                states.add(listing["experiments"][0]["state"])
                page = await get(jp_fetch, listing["experiments"][0]["id"], "metrics", since=str(cursor))
                seen += len(page["rows"])
                cursor = page["cursor"]
            time.sleep(0.3)
    finally:
        runner.join(60)
    assert "running" in states and 0 < seen
    page = await get(jp_fetch, done[0].id, "metrics", since=str(cursor))
    assert seen + len(page["rows"]) == 80  # the cursor never skipped or repeated a row


async def test_bad_ids_and_missing_experiments_are_clear_json_errors(jp_fetch, run_hpo):
    run_hpo(noisy, {"lr": space.uniform(0.01, 0.3)}, trials=1, metric="acc")
    for path, code in [
        (("..%2F..%2Fetc%2Fpasswd",), 400),
        (("20991231-235959-abcdef",), 404),
        (("20991231-235959-abcdef", "metrics"), 404),
        (("not-an-id", "logs", "0"), 400),
    ]:
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch(*API, *path)
        assert err.value.code == code
        assert "message" in json.loads(err.value.response.body)


async def test_every_endpoint_needs_jupyters_token(jp_fetch, jp_http_port, jp_base_url, run_hpo):
    exp = run_hpo(noisy, {"lr": space.uniform(0.01, 0.3)}, trials=1, metric="acc")
    await jp_fetch(*API)  # with the token
    client = tornado.httpclient.AsyncHTTPClient()
    paths = ("", f"/{exp.id}", f"/{exp.id}/metrics", f"/{exp.id}/curves", f"/{exp.id}/importances")
    paths += (f"/{exp.id}/utilization",)
    for path in (*paths, f"/{exp.id}/logs/0", f"/{exp.id}/stop"):
        url = f"http://localhost:{jp_http_port}{jp_base_url}jupyter-dist/api/experiments{path}"
        post = path.endswith("/stop")
        response = await client.fetch(
            url, method="POST" if post else "GET", body=b"" if post else None, raise_error=False
        )
        assert response.code == 403, (path, response.code)


def steadily(x=0.0):
    import time

    for step in range(40):
        time.sleep(0.05)
        jd.report(step=step, v=x + step)
    return {"v": x}


async def test_a_stop_asked_through_the_server_stops_the_run_in_its_kernel(jp_fetch, run_hpo):
    """JupyterLab's Stop button posts here; the run (here in this process, as in any kernel) sees the request
    in the store and stops as the notebook's own Stop would."""
    done = []
    runner = threading.Thread(
        target=lambda: done.append(
            run_hpo(steadily, {"x": space.uniform(0, 1)}, trials=12, parallel=2, metric="v", pruner=None)
        )
    )
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listing = await get(jp_fetch)
            if listing["total"] and listing["experiments"][0]["trials_done"] >= 1:
                break
            await asyncio.sleep(0.1)
        experiment_id = listing["experiments"][0]["id"]
        asked = time.monotonic()
        response = await jp_fetch(*API, experiment_id, "stop", method="POST", body=b"")
        assert response.code == 202
        while runner.is_alive() and time.monotonic() - asked < 30:
            await asyncio.sleep(0.1)
        stopped_after = time.monotonic() - asked
    finally:
        runner.join(60)
    exp = done[0]
    assert exp.state == "stopped" and exp.done < 12
    assert stopped_after < 5  # a flush interval to see it, then the running trials' stop
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:  # it has ended: nothing to stop
        await jp_fetch(*API, experiment_id, "stop", method="POST", body=b"")
    assert err.value.code == 409 and "not running (stopped)" in json.loads(err.value.response.body)["message"]


def test_the_extension_is_enabled_on_install():
    import subprocess
    import sys
    from pathlib import Path

    jupyter = Path(sys.executable).with_name("jupyter")
    listed = subprocess.run(
        [str(jupyter), "server", "extension", "list"], capture_output=True, text=True, timeout=120
    )
    text = listed.stdout + listed.stderr
    assert "jupyter_dist" in text and "enabled" in text
    assert "jupyter_dist 0" in text and "OK" in text.split("jupyter_dist 0", 1)[1].splitlines()[0]


async def test_a_queued_trial_is_served_queued_then_running_once_it_began(jp_fetch, fresh_store):
    """A trial waiting on its worker behind another (trials/_loop.py BRIEF_TRIAL) is "running" with
    ``queued`` true and no ``began`` until it begins; the kernel's snapshot, built by the same function from its
    live record, says the same."""
    definition = ExperimentDefinition("hpo", "waiting", Objective("acc"), {}, total=2)
    record = InMemoryRecord(definition, Journal(fresh_store, definition, {}, name_given=True))
    try:
        record.trial_started(0, {"i": 0}, {})
        record.trial_started(1, {"i": 1}, {}, queued=True)
        served = await _when(jp_fetch, definition.id, lambda d: len(d["trials"]) == 2)
        # The running trials, by id (the first page lists them too, newest first).
        waiting = served["running"][1]
        assert (waiting["state"], waiting["queued"], waiting["began"]) == ("running", True, None)
        assert served["running"][0]["queued"] is False and served["running"][0]["began"] is not None
        assert served["counts"] == {"running": 1, "queued": 1}
        assert experiment_detail(record)["trials"] == served["trials"] == served["running"][::-1]
        assert experiment_detail(record)["running"] == served["running"]

        began = time.time()
        record.trial_began(1)
        served = await _when(jp_fetch, definition.id, lambda d: not d["running"][1]["queued"])
        running = served["running"][1]
        assert running["state"] == "running" and running["began"] == pytest.approx(began, abs=1)
        assert experiment_detail(record)["running"] == served["running"]
    finally:
        record.finish(ExperimentState.STOPPED)


async def _when(jp_fetch, experiment_id: str, ready, timeout: float = 30) -> dict:
    """The experiment's detail once ``ready(detail)`` (its writer flushes every FLUSH_INTERVAL_S)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            detail = await get(jp_fetch, experiment_id)
            if ready(detail):
                return detail
        except tornado.httpclient.HTTPClientError as err:
            if err.code != 404:  # not written yet
                raise
        assert time.monotonic() < deadline, "the store never showed it"
        await asyncio.sleep(FLUSH_INTERVAL_S / 2)


def test_what_the_store_reader_refuses_is_a_jupyter_dist_error_and_the_builtin_it_was(fresh_store):
    """The errors the REST API answers with 400, 404 and 409 belong to the family (``except JupyterDistError``
    catches them) and are still the ValueError, LookupError and RuntimeError they were."""
    definition = ExperimentDefinition("hpo", "ended", Objective("acc"), {}, total=1)
    InMemoryRecord(definition, Journal(fresh_store, definition, {}, name_given=True)).finish(
        ExperimentState.COMPLETED
    )
    reader = StoreReader(fresh_store)
    refused = [
        (lambda: reader.detail("../../etc/passwd"), jd.ArgumentError, ValueError, "is not an experiment id"),
        (lambda: reader.metrics_page(definition.id, since=-1), jd.ArgumentError, ValueError, "offset >= 0"),
        (lambda: reader.detail("20991231-235959-abcdef"), NotInStore, LookupError, "no experiment 2099"),
        (lambda: reader.logs(definition.id, 7), NotInStore, LookupError, "has no trial 7"),
        (lambda: reader.request_stop(definition.id), NotRunning, RuntimeError, "not running (completed)"),
        (lambda: StoreReader(None).detail(definition.id), NotInStore, LookupError, "no experiment has been"),
    ]
    for call, ours, builtin, says in refused:
        with pytest.raises(ours, match=re.escape(says)) as err:
            call()
        assert isinstance(err.value, jd.JupyterDistError) and isinstance(err.value, builtin)


async def test_parameter_importances_are_served_for_an_hpo_run(jp_fetch, run_hpo):
    def quadratic(lr, width):
        return {"acc": -((lr - 0.2) ** 2) * 100 + width * 1e-6}

    few = run_hpo(
        quadratic,
        {"lr": space.uniform(0.0, 1.0), "width": space.integer(1, 8)},
        trials=3,
        metric="acc",
        pruner=None,
        name="few",
    )
    answer = await get(jp_fetch, few.id, "importances")
    assert answer == {"evaluator": "PED-ANOVA", "completed": 3, "needed": 5, "importances": None}

    exp = run_hpo(
        quadratic,
        {"lr": space.uniform(0.0, 1.0), "width": space.integer(1, 8)},
        trials=12,
        metric="acc",
        pruner=None,
        seed=3,
        name="enough",
    )
    answer = await get(jp_fetch, exp.id, "importances")
    assert answer["completed"] == 12
    importances = answer["importances"]
    assert set(importances) == {"lr", "width"} and abs(sum(importances.values()) - 1) < 1e-6
    assert importances["lr"] > importances["width"]  # the objective hardly depends on width

    ablated = jd.ablation(
        lambda features, flag=True: {"acc": len(features)},
        features=["a", "b"],
        metric="acc",
        cluster=run_hpo.keywords["cluster"],
        progress=False,
    )
    with pytest.raises(tornado.httpclient.HTTPClientError) as refused:
        await jp_fetch(*API, ablated.id, "importances")
    assert (
        refused.value.code == 400
        and "only an hpo experiment" in json.loads(refused.value.response.body)["message"]
    )
