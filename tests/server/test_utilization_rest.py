"""GET .../utilization: the trials' utilisation samples as the store keeps them, paged by cursor, one trial's or
every trial's, on a real Jupyter server over a store a record's journal wrote."""

from __future__ import annotations

import json

import pytest
import tornado.httpclient

from jupyter_dist.protocol import ExperimentState, Objective, UtilizationSample
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord, Journal, UtilizationPage

pytest_plugins = ["pytest_jupyter.jupyter_server"]

API = ("jupyter-dist", "api", "experiments")


@pytest.fixture
def jp_server_config(fresh_store):  # the store is chosen (environment) before the server starts
    return {"ServerApp": {"jpserver_extensions": {"jupyter_dist": True}}}


async def get(jp_fetch, *path, **params):
    response = await jp_fetch(*API, *path, params=params)
    return json.loads(response.body)


def recorded(store: str) -> str:
    """An ended run of two trials, three samples each, trial 1's with a GPU read."""
    definition = ExperimentDefinition("hpo", "used", Objective("acc"), {}, total=2)
    record = InMemoryRecord(definition, Journal(store, definition, {}, name_given=True))
    record.trial_started(0, {}, {})
    record.trial_started(1, {}, {})
    for second in range(3):
        record.utilization_arrived(UtilizationSample(0, "a", 100.0 + second, 95.0, 300.0, None, None))
        record.utilization_arrived(UtilizationSample(1, "b", 100.5 + second, 40.0, 250.0, 80.0, 1024.0))
    record.finish(ExperimentState.COMPLETED)
    return definition.id


async def test_samples_are_served_by_trial_and_by_cursor(jp_fetch, fresh_store):
    experiment_id = recorded(fresh_store)
    every = await get(jp_fetch, experiment_id, "utilization")
    assert set(every) == set(UtilizationPage.__annotations__)
    assert every["columns"] == ["trial_id", "time", "cpu_percent", "rss_mb", "gpu_util", "gpu_mem_mb"]
    assert len(every["rows"]) == 6 and not every["more"]
    assert every["rows"][0] == [0, 100.0, 95.0, 300.0, None, None]
    assert every["rows"][1] == [1, 100.5, 40.0, 250.0, 80.0, 1024.0]

    first = await get(jp_fetch, experiment_id, "utilization", trial="1", limit="2")
    assert [row[0] for row in first["rows"]] == [1, 1] and first["more"]
    rest = await get(jp_fetch, experiment_id, "utilization", trial="1", since=str(first["cursor"]))
    assert [row[1] for row in rest["rows"]] == [102.5] and not rest["more"]

    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch(*API, experiment_id, "utilization", params={"trial": "x"})
    assert err.value.code == 400


def test_a_loaded_run_has_the_samples_its_journal_wrote(fresh_store):
    import jupyter_dist as jd

    frame = jd.load(recorded(fresh_store)).utilization
    assert frame.trial_id.tolist() == [0, 1] * 3
    assert frame[frame.trial_id == 0].gpu_util.isna().all()
    assert frame[frame.trial_id == 1].gpu_mem_mb.tolist() == [1024.0] * 3
