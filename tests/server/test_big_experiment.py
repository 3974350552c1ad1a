"""Issue 44: an experiment of 100,000 trials, served by a real Jupyter server: its detail stays small (its first
page of trials, counts, best and running trials, not every trial), and GET .../trials pages through the rest in
the order the views list them. The store is written without Dask, through the run's own record and writer
(tests/lab/big_experiment.py), in ~10 s."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import tornado.httpclient

from jupyter_dist.store import FLUSH_INTERVAL_S, StoreReader, TrialSummary
from jupyter_dist.store._reader import TRIALS_PAGE
from jupyter_dist.widgets._lab import SNAPSHOT_TRIALS

sys.path.insert(0, str(Path(__file__).parents[1] / "lab"))
from big_experiment import write_experiment  # noqa: E402

pytest_plugins = ["pytest_jupyter.jupyter_server"]

API = ("jupyter-dist", "api", "experiments")
TRIALS = 100_000
RUNNING, FAILED = 8, 5
DETAIL_BYTES = 200_000  # the bound on a live 100k-trial run's detail


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A live run of TRIALS completed trials, FAILED failed and RUNNING running ones (its writer open)."""
    store = str(tmp_path_factory.mktemp("big") / "experiments.sqlite")
    record = write_experiment(store, trials=TRIALS, steps=1, running=RUNNING, failed=FAILED)
    deadline = time.monotonic() + 60
    reader = StoreReader(store)
    while (
        reader.experiments()["experiments"][0]["trials_done"] < TRIALS + FAILED
    ):  # its writer's next commits
        assert time.monotonic() < deadline
        time.sleep(FLUSH_INTERVAL_S)
    yield store, record
    from jupyter_dist.protocol import ExperimentState

    record.finish(ExperimentState.STOPPED)


@pytest.fixture
def jp_server_config(big, monkeypatch):
    monkeypatch.setenv("JUPYTER_DIST_STORE", big[0])
    return {"ServerApp": {"jpserver_extensions": {"jupyter_dist": True}}}


async def fetch(jp_fetch, *path, **params):
    response = await jp_fetch(*API, *path, params=params)
    return response.body, json.loads(response.body)


def ranked(trials: list[TrialSummary]) -> list[float]:
    return [t["value"] for t in trials]


async def test_a_100k_trial_runs_detail_is_small_and_says_what_it_leaves_out(jp_fetch, big):
    _, record = big
    experiment_id = record.definition.id
    started = time.perf_counter()
    body, detail = await fetch(jp_fetch, experiment_id)
    seconds = time.perf_counter() - started
    print(f"the detail of a live {TRIALS:,}-trial run: {len(body):,} bytes in {seconds:.2f} s")
    assert len(body) <= DETAIL_BYTES, len(body)
    assert seconds < 5, seconds  # ~0.15 s alone; the 2-core test machine is shared
    assert detail["state"] == "running"
    assert detail["trial_count"] == TRIALS + FAILED + RUNNING
    assert detail["counts"] == {"completed": TRIALS, "failed": FAILED, "running": RUNNING}
    assert detail["trials_done"] == TRIALS + FAILED
    assert [t["trial_id"] for t in detail["running"]] == list(
        range(TRIALS + FAILED, TRIALS + FAILED + RUNNING)
    )
    assert len(detail["trials"]) == TRIALS_PAGE
    values = ranked(detail["trials"])
    assert values == sorted(values, reverse=True)  # best first (acc is maximised)
    best = max(record.trial_records()[:TRIALS], key=lambda r: (r.value, -r.trial_id))
    assert detail["best"]["trial_id"] == best.trial_id == detail["trials"][0]["trial_id"]
    assert detail["best"]["value"] == pytest.approx(best.value)


async def test_the_trials_are_paged_best_first_by_id_and_by_state(jp_fetch, big):
    _, record = big
    experiment_id = record.definition.id
    total = TRIALS + FAILED + RUNNING
    _, first = await fetch(jp_fetch, experiment_id, "trials", limit="1000")
    _, second = await fetch(jp_fetch, experiment_id, "trials", offset="1000", limit="1000")
    assert first["total"] == total and first["offset"] == 0 and second["offset"] == 1000
    values = ranked(first["trials"]) + ranked(second["trials"])
    assert len(values) == 2000 and values == sorted(values, reverse=True)
    _, detail = await fetch(jp_fetch, experiment_id)
    assert first["trials"][:TRIALS_PAGE] == detail["trials"]

    # The end of best first: the completed trials' worst, then the running ones newest first, then the failed.
    _, last = await fetch(jp_fetch, experiment_id, "trials", offset=str(total - 20), limit="100")
    assert [t["state"] for t in last["trials"]] == ["completed"] * 7 + ["running"] * RUNNING + [
        "failed"
    ] * FAILED
    running = [t["trial_id"] for t in last["trials"] if t["state"] == "running"]
    assert running == sorted(running, reverse=True)

    _, by_id = await fetch(jp_fetch, experiment_id, "trials", sort="id", offset="50000", limit="3")
    assert [t["trial_id"] for t in by_id["trials"]] == [50000, 50001, 50002]
    _, failed = await fetch(jp_fetch, experiment_id, "trials", state="failed")
    assert failed["total"] == FAILED and {t["state"] for t in failed["trials"]} == {"failed"}
    assert failed["trials"][0]["error"] == "ValueError: no"
    _, past = await fetch(jp_fetch, experiment_id, "trials", offset=str(total), limit="10")
    assert past["trials"] == [] and past["total"] == total


async def test_bad_paging_arguments_are_400s(jp_fetch, big):
    experiment_id = big[1].definition.id
    for params in (
        {"limit": "0"},
        {"limit": "10001"},
        {"offset": "-1"},
        {"sort": "value"},
        {"state": "done"},
    ):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await fetch(jp_fetch, experiment_id, "trials", **params)
        assert err.value.code == 400, params
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await fetch(jp_fetch, experiment_id, "curves", limit="0")
    assert err.value.code == 400


async def test_the_curves_are_paged_by_trial(jp_fetch, big):
    experiment_id = big[1].definition.id
    _, page = await fetch(jp_fetch, experiment_id, "curves", trials="0-99", limit="40")
    assert [t[0] for t in page["trials"]] == list(range(40)) and page["more"]
    _, rest = await fetch(jp_fetch, experiment_id, "curves", trials="40-99", limit="100")
    assert [t[0] for t in rest["trials"]] == list(range(40, 100)) and not rest["more"]


def test_the_kernels_snapshot_of_a_100k_trial_run_keeps_its_best_page(big):
    """The saved cell: the best SNAPSHOT_TRIALS trials, the counts and the running ones, read without walking every
    trial; the same first trials as the REST detail."""
    from jupyter_dist.experiment import Experiment
    from jupyter_dist.widgets._lab import experiment_snapshot

    store, record = big
    snapshot = experiment_snapshot(Experiment(record))
    assert len(snapshot["trials"]) == SNAPSHOT_TRIALS and snapshot["trial_count"] == TRIALS + FAILED + RUNNING
    assert len(json.dumps(snapshot)) < 1_000_000
    served = StoreReader(store).detail(record.definition.id)
    assert snapshot["trials"][:TRIALS_PAGE] == served["trials"]
    assert snapshot["counts"] == served["counts"] and snapshot["best"] == served["best"]
    # (A running trial's latest steps reach the store with its next change, not with each report.)
    assert [(t["trial_id"], t["state"]) for t in snapshot["running"]] == [
        (t["trial_id"], t["state"]) for t in served["running"]
    ]
