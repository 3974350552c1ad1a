"""Large data by reference: with_parameters(fn, **objects) and large pickled functions, put on the cluster once
per run and released at its end, on the real LocalCluster."""

import time

import dask
import numpy as np
import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.trials import DaskLauncher, _by_reference, _worker_cache


def train(data, x=0.0, scale=1.0):
    jd.report(step=0, v=float(data.sum()) * scale + x)
    return float(data.sum()) * scale + x


def _fetched_on_workers(client) -> set[str]:
    return set().union(*client.run(lambda: set(_worker_cache._fetched)).values())


def _scattered(client, settled_at: int | None = None) -> int:
    """How many keys of scattered data the scheduler holds; ``settled_at``: waiting (up to 10 s) for that many,
    as releases reach the scheduler a moment after the run has ended."""
    deadline = time.monotonic() + 10
    while True:
        held = client.run_on_scheduler(
            lambda dask_scheduler: sum(1 for ts in dask_scheduler.tasks.values() if ts.run_spec is None)
        )
        if settled_at is None or held == settled_at or time.monotonic() > deadline:
            return held
        time.sleep(0.05)


def test_with_parameters_hands_every_trial_the_objects_by_reference_and_releases_them(client, run_hpo):
    data = np.arange(10.0)
    wrapped = jd.with_parameters(train, data=data)
    assert wrapped.__name__ == "train" and wrapped(x=1.0) == 46.0  # called here, as train(data=data, x=1.0)
    big = jd.with_parameters(train, data=np.random.default_rng(0).random(300_000))  # 2.4 MB
    launcher = DaskLauncher(client, big, "with-parameters-test")
    assert (
        isinstance(launcher.tasks.fn_blob, bytes) and len(launcher.tasks.fn_blob) < 50_000
    )  # the keys, not the data
    launcher.tasks.shipment.release(launcher.tasks.fn_key)
    held_before = _scattered(client, settled_at=0)  # what the launchers above released is gone
    exp = run_hpo(wrapped, {"x": space.uniform(0, 1), "scale": 2.0}, trials=4, metric="v")
    assert exp.state == "completed" and exp.record.definition.name == "train"
    assert all(abs(t.value - (90.0 + t.params_x)) < 1e-9 for t in exp.trials.itertuples())
    # Nothing of the run is left on the cluster: its data released, what workers fetched forgotten.
    assert _scattered(client, settled_at=held_before) == held_before
    assert _fetched_on_workers(client) == set()


def test_the_search_space_sees_the_functions_other_arguments_only(client, run_hpo):
    wrapped = jd.with_parameters(train, data=np.ones(3))
    with pytest.raises(jd.SearchSpaceError, match=r"train\(\) has no argument 'data'"):
        run_hpo(wrapped, {"data": space.uniform(0, 1)}, trials=1, metric="v")
    with pytest.raises(jd.ArgumentError, match=r"train\(\) has no argument 'dataset'"):
        jd.with_parameters(train, dataset=np.ones(3))


def test_an_ablation_study_and_a_data_parallel_run_take_it_too(client, run_ablation, run_ddp):
    def study(data, features=(), seed=0):
        return {"v": float(sum(data[name] for name in features))}

    exp = run_ablation(jd.with_parameters(study, data={"a": 1.0, "b": 2.0}), features=["a", "b"], metric="v")
    assert sorted(exp.trials.value) == [1.0, 2.0, 3.0]

    def ranks(data):
        jd.report(step=0, total=float(data.sum()) + jd.rank())
        return float(data.sum())

    run = run_ddp(jd.with_parameters(ranks, data=np.arange(3.0)), workers=2)
    assert run.result == 3.0
    assert _fetched_on_workers(client) == set()


def test_a_large_function_travels_once_as_a_key_and_small_ones_inline(client, run_hpo):
    big = np.random.default_rng(0).random(300_000)  # 2.4 MB, above the 1 MiB default
    fn = _closure_over(big)
    launcher = DaskLauncher(client, fn, "by-ref-test")
    assert isinstance(launcher.tasks.fn_blob, str)  # only the key travels with each task
    launcher.tasks.shipment.release(launcher.tasks.fn_key)
    assert isinstance(DaskLauncher(client, _closure_over(big[:10]), "small").tasks.fn_blob, bytes)
    with dask.config.set({"jupyter_dist.scatter-threshold": None}):
        assert isinstance(DaskLauncher(client, fn, "never").tasks.fn_blob, bytes)

    held_before = _scattered(client, settled_at=0)  # what the launchers above released is gone
    exp = run_hpo(fn, {"x": space.uniform(0, 1)}, trials=4, metric="v")
    assert all(abs(t.value - (big[0] + t.params_x)) < 1e-9 for t in exp.trials.itertuples())
    assert _scattered(client, settled_at=held_before) == held_before


def _closure_over(array):
    def fn(x=0.0):
        jd.report(step=0, v=float(array[0]) + x)
        return float(array[0]) + x

    return fn


def test_a_bad_threshold_is_named():
    with dask.config.set({"jupyter_dist.scatter-threshold": "lots"}):
        with pytest.raises(jd.ArgumentError, match=r"jupyter_dist.scatter-threshold='lots'"):
            _by_reference.scatter_threshold()


def test_data_no_worker_holds_any_more_fails_the_trial_instead_of_waiting_forever(client):
    # Scattered data lives on the workers that hold it: when they die the scheduler forgets its key, as it does
    # here when the last reference goes. A worker asking for it then must say so, not wait for ever.
    (future,) = client.scatter([np.ones(3)], hash=False)
    key = future.key
    del future
    deadline = time.monotonic() + 10
    while client.run_on_scheduler(lambda dask_scheduler, key=key: key in dask_scheduler.tasks):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    asked = client.submit(_worker_cache.fetch, key, pure=False)
    with pytest.raises(jd.TrialFunctionError, match="was lost with the workers holding it"):
        asked.result(timeout=60)


class _BreaksAtTheStart(jd.Callback):
    def on_experiment_start(self, exp):
        raise RuntimeError("the tracking server is down")


def test_the_data_leaves_the_cluster_when_the_run_fails_before_its_first_trial(client, run_hpo):
    held_before = _scattered(client, settled_at=None)
    wrapped = jd.with_parameters(train, data=np.ones(5))
    # refused when placing its trials (no worker declares MEM), after the data went to the cluster
    with pytest.raises(jd.PlacementError):
        run_hpo(wrapped, {"x": space.uniform(0, 1)}, trials=2, metric="v", resources={"MEM": 1})
    assert _scattered(client, settled_at=held_before) == held_before
    # failed by a callback before any trial started
    with pytest.raises(jd.ExperimentFailed, match="the tracking server is down"):
        run_hpo(wrapped, {"x": space.uniform(0, 1)}, trials=2, metric="v", callbacks=[_BreaksAtTheStart()])
    assert _scattered(client, settled_at=held_before) == held_before
