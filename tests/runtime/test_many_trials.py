"""Many trials per worker on a real cluster (2 worker processes x 16 threads): the events and graph updates an
experiment costs grow with the workers, not with the trials (issue 26), and nothing is lost or doubled."""

from __future__ import annotations

import gc
import statistics
import time

import pytest
from distributed.diagnostics.plugin import SchedulerPlugin
from published import messages_by, published, sent_by

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import ReportBatch

TRIALS = 32  # all at once: 16 per worker
STEPS = 10


def reports_every_20ms(x=0.0):
    import time

    import jupyter_dist

    for step in range(STEPS):
        time.sleep(0.02)
        jupyter_dist.report(step=step, v=x + step)
    return x


@pytest.fixture(scope="module")
def many_threads():
    from distributed import Client, LocalCluster

    from jupyter_dist.cluster import forget_cluster

    with LocalCluster(
        n_workers=2, threads_per_worker=16, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        with Client(cluster) as client:
            client.wait_for_workers(2)
            yield cluster, client
            forget_cluster(client)


class GraphUpdates(SchedulerPlugin):
    """Writes down the trial tasks of each of the scheduler's graph updates."""

    name = "jupyter_dist-test-graph-updates"

    def __init__(self) -> None:
        self.keys: list[list[str]] = []

    def update_graph(self, scheduler, *, keys, **kwargs) -> None:
        trials = [k for k in keys if isinstance(k, str) and "-trial-" in k]
        if trials:
            self.keys.append(trials)


def _run(client, pruner, progress=False):
    return jd.hpo(
        reports_every_20ms,
        {"x": space.uniform(0, 1)},
        trials=TRIALS,
        parallel=TRIALS,
        metric="v",
        sampler="random",
        pruner=pruner,
        cluster=client,
        progress=progress,
    )


def _check_every_report_once(exp) -> None:
    h = exp.history
    assert len(h) == TRIALS * STEPS
    assert (h.groupby("trial_id").step.apply(sorted) == [list(range(STEPS))] * TRIALS).all()
    assert (exp.trials.state == "completed").all()


def test_the_trials_of_a_worker_share_its_events_and_start_in_one_graph_update(many_threads):
    cluster, client = many_threads
    updates = GraphUpdates()
    cluster.scheduler.add_plugin(updates)
    try:
        with published(cluster.scheduler) as sent:
            exp = _run(client, pruner=None)
    finally:
        cluster.scheduler.remove_plugin(name=updates.name)
    _check_every_report_once(exp)
    events = messages_by(sent, exp)
    # Each trial alone sent at least two (its reports, its outcome): 64 or more. Per worker there is one event
    # per 0.2 s while they report (~0.25 s), and the outcomes of trials ending together share one.
    assert len(events) <= 16, [len(e) for e in events]
    assert max(len({m.trial_id for m in e}) for e in events) > 4  # several trials' messages in one event
    # The scheduler keeps the topic's last 1,000 events while the run goes on; with the embedded cluster they live
    # in the kernel. Each is one bytes object there, nothing its garbage collector scans: not a few hundred
    # containers per event.
    kept = sent_by(sent, exp)
    assert kept and not any(gc.is_tracked(msg) for msg in kept)
    # All 32 placed at once go to the scheduler as one graph update (each trial its own update before).
    ours = [keys for keys in updates.keys if any(exp.id in k for k in keys)]
    assert len(ours) == 1 and len(ours[0]) == TRIALS


def test_reports_a_pruner_decides_on_arrive_within_its_latency_target(many_threads):
    cluster, client = many_threads
    waited: list[float] = []

    def listener_view(exp):
        class Listen:
            def start(self):
                exp._add_report_listener(
                    lambda trial_id, rows: waited.extend(time.time() - r[2] for r in rows)
                )

            def idle(self):
                pass

            def finish(self):
                pass

        return Listen()

    # A pruner asked at every report that never prunes (v >= 0): the reports travel as fresh ones.
    import optuna

    with published(cluster.scheduler) as sent:
        exp = _run(client, pruner=optuna.pruners.ThresholdPruner(lower=-1.0), progress=listener_view)
    _check_every_report_once(exp)
    assert len(waited) == TRIALS * STEPS
    assert statistics.median(waited) < 0.05  # the target for a pruner's reports
    # 32 trials x 10 reports 20 ms apart each left alone (5 ms wait): ~320 events; together, a few dozen.
    events = [e for e in messages_by(sent, exp) if any(isinstance(m, ReportBatch) for m in e)]
    assert len(events) < TRIALS * STEPS / 4, len(events)


def brief(x=0.0):
    import time

    import jupyter_dist

    began = time.time()
    jupyter_dist.report(step=0, began=began)
    time.sleep(0.15)
    jupyter_dist.report(step=1, ended=time.time())
    return {"v": x}


def test_a_parallel_below_the_clusters_threads_is_kept_though_trials_are_brief(many_threads):
    # Brief trials are queued on the workers behind the running ones only where they would wait there: with 32
    # threads and parallel=8, a queued trial would start at once, a ninth trial running.
    _, client = many_threads
    exp = jd.hpo(
        brief,
        {"x": space.uniform(0, 1)},
        trials=48,
        parallel=8,
        metric="v",
        sampler="random",
        pruner=None,
        cluster=client,
        progress=False,
    )
    spans = [(r.last["began"], r.last["ended"]) for r in exp.trial_records()]
    events = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    assert most <= 8 and len(spans) == 48


def three_reports(x=0.0):
    import jupyter_dist

    for step in range(3):
        jupyter_dist.report(step=step, v=x)
    return x


def test_a_finished_run_leaves_nothing_of_its_loop_search_or_launcher_in_the_kernel(run_hpo):
    """A kernel runs many experiments: once one has ended, only its Experiment (and what it reads) stays. The
    client's event handler of the run's topic outlived it (Dask's unsubscribe_topic keeps it) and held its trial
    loop, its launcher with the pickled function, and its search with every finished trial's FrozenTrial; and the
    process's first run was kept by the ImportErrors optuna keeps, when optuna was first imported in it."""
    from jupyter_dist.search import OptunaSearch
    from jupyter_dist.trials import DaskLauncher, TrialLoop

    def held() -> set[int]:
        gc.collect()
        return {id(o) for o in gc.get_objects() if isinstance(o, (TrialLoop, DaskLauncher, OptunaSearch))}

    before = held()
    for _ in range(2):
        run_hpo(three_reports, {"x": space.uniform(0, 1)}, trials=20, metric="v")
    assert held() <= before, "a finished run's trial loop, launcher or search is still held"


def _topics_of_ours(dask_scheduler=None) -> dict[str, tuple[int, int]]:
    """The scheduler's jupyter_dist topics: each one's (events kept, subscribers)."""
    return {
        name: (len(topic.events), len(topic.subscribers))
        for name, topic in dask_scheduler._broker._topics.items()
        if name.startswith("jupyter_dist-")
    }


def test_a_finished_run_leaves_none_of_its_events_on_the_scheduler(run_hpo, client):
    """The scheduler keeps each topic's last 1,000 events for its life: a cluster that outlives many runs kept
    each one's batches of reports. The run's topic holds them while it runs, and nothing once it has ended."""
    seen: list[dict] = []

    class Watch(jd.Callback):
        def on_trial_end(self, exp, trial):
            seen.append(client.run_on_scheduler(_topics_of_ours))

    exp = run_hpo(three_reports, {"x": space.uniform(0, 1)}, trials=6, metric="v", callbacks=[Watch()])
    topic = f"jupyter_dist-{exp.id}"
    assert any(topics.get(topic, (0, 0))[0] > 0 for topics in seen)  # it did keep them while the run went on
    assert client.run_on_scheduler(_topics_of_ours).get(topic, (0, 0)) == (0, 0)
