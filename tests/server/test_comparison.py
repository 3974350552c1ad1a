"""GET /jupyter-dist/api/compare: stored experiments side by side, as jupyter_dist.compare() has them, on a real
Jupyter server (pytest-jupyter) over a store written by real experiments."""

import json

import pytest
import tornado.httpclient

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.store import (
    MAX_COMPARED,
    ComparedExperiment,
    ExperimentComparison,
    NotInStore,
    StoreReader,
)

pytest_plugins = ["pytest_jupyter.jupyter_server"]

COMPARE = ("jupyter-dist", "api", "compare")


@pytest.fixture
def jp_server_config(fresh_store):  # the store is chosen (environment) before the server starts
    return {"ServerApp": {"jpserver_extensions": {"jupyter_dist": True}}}


def bowl(x=0.5, y=0.5):
    return {"score": -((x - 0.2) ** 2) - 0.1 * (y - 0.5) ** 2}


SPACE = {"x": space.uniform(0, 1), "y": space.uniform(0, 1)}


async def compare(jp_fetch, experiments: str) -> ExperimentComparison:
    response = await jp_fetch(*COMPARE, params={"experiments": experiments})
    return json.loads(response.body)


async def refused(jp_fetch, experiments: str | None) -> tuple[int, str]:
    params = {} if experiments is None else {"experiments": experiments}
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch(*COMPARE, params=params)
    return err.value.code, json.loads(err.value.response.body)["message"]


async def test_the_comparison_is_what_compare_computes_in_the_kernel(jp_fetch, run_hpo, run_ablation):
    random = run_hpo(bowl, SPACE, trials=8, metric="score", sampler="random", seed=1, name="random")
    tpe = run_hpo(bowl, SPACE, trials=6, metric="score", sampler="tpe", seed=1, name="tpe")
    study = run_ablation(lambda features: {"score": len(features)}, features=["a", "b"], metric="score")
    # By id and by name, in the order named.
    answer = await compare(jp_fetch, f"{tpe.id},random,{study.id}")
    rows = answer["experiments"]
    assert [row["name"] for row in rows] == ["tpe", "random", study.name]
    assert all(set(row) == set(ComparedExperiment.__annotations__) for row in rows)

    summary = jd.compare(tpe, random, study).summary
    for row, (_, expected) in zip(rows, summary.iterrows(), strict=True):
        for column in jd._compare.SUMMARY_COLUMNS:
            if column == "started":  # seconds since the epoch here, a Timestamp in the DataFrame
                assert row["started"] == pytest.approx(expected.started.timestamp())
            elif column == "duration":  # a finished run's: the same from both
                assert row["duration"] == pytest.approx(expected.duration)
            else:
                assert row[column] == expected[column], column
    for row, exp in ((rows[0], tpe), (rows[1], random)):
        assert row["id"] == exp.id and row["metric"] == "score" and row["mode"] == "max"
        assert (row["ended"], row["best_so_far"]) == jd._compare.best_so_far(exp)
        assert len(row["best_so_far"]) == exp.done and row["best_so_far"][-1] == exp.best.value
    # Importances where the kernel's figure draws them: an HPO run with enough completed trials.
    assert set(rows[1]["importances"]["importances"]) == {"x", "y"}
    assert rows[0]["importances"]["completed"] == 6
    assert rows[2]["importances"] is None and rows[2]["kind"] == "ablation"


async def test_an_unknown_name_or_id_is_a_404_naming_each(jp_fetch, run_hpo):
    exp = run_hpo(bowl, SPACE, trials=1, metric="score", name="known")
    code, message = await refused(jp_fetch, f"known,nope,{exp.id},20991231-235959-abcdef")
    assert code == 404
    assert "'nope'" in message and "'20991231-235959-abcdef'" in message and "'known'" not in message


async def test_a_missing_or_too_long_list_is_a_400(jp_fetch, run_hpo):
    run_hpo(bowl, SPACE, trials=1, metric="score", name="one")
    for experiments in (None, "", "one,,one", ",".join(["one"] * (MAX_COMPARED + 1))):
        code, message = await refused(jp_fetch, experiments)
        assert code == 400 and f"1 to {MAX_COMPARED} experiment names or ids" in message, experiments


def test_a_reader_with_nothing_recorded_says_so(fresh_store):
    with pytest.raises(NotInStore, match="no experiment has been recorded yet"):
        StoreReader(fresh_store).records(["anything"])


async def test_the_comparison_needs_jupyters_token(jp_fetch, jp_http_port, jp_base_url, run_hpo):
    exp = run_hpo(bowl, SPACE, trials=1, metric="score")
    await compare(jp_fetch, exp.id)  # with the token
    url = f"http://localhost:{jp_http_port}{jp_base_url}jupyter-dist/api/compare?experiments={exp.id}"
    response = await tornado.httpclient.AsyncHTTPClient().fetch(url, raise_error=False)
    assert response.code == 403, response.code
