"""The trial loop on its own: a fake launcher and source, the real in-memory record, no Dask.

The fake launcher runs each trial by a script: it ends at once with a given outcome, or runs until told to stop
(then it ends pruned, as a worker's next report() would make it), or ignores every stop, or its task fails.
"""

from __future__ import annotations

import contextlib
import re
import threading

import pytest

from jupyter_dist import ClusterLost, MetricError
from jupyter_dist.protocol import Direction, ErrorKind, Objective, Outcome, ReportBatch, TrialState
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.trials import RunningTrial, StopSignal, TrialLoop, TrialSpec, _loop
from jupyter_dist.trials._seams import TaskEnded

RUNS_UNTIL_STOPPED = "until stopped"
IGNORES_STOP = "ignores stop"
TASK_FAILS = "its task fails"  # on the cluster itself: no outcome event, only the task's end


class FakeLauncher:
    """``script(spec)``: an Outcome (the trial ends with it at once), RUNS_UNTIL_STOPPED or IGNORES_STOP."""

    def __init__(self, script) -> None:
        self.script = script
        self.started: list[int] = []
        self.in_flight: set[int] = set()
        self.most_in_flight = 0
        self.stops: list[list[int] | None] = []
        self.trials: dict[int, RunningTrial] = {}
        self.cancelled: set[int] = set()
        self.behaviour: dict[int, object] = {}
        self.gone_after: int | None = None  # the cluster goes away once this many trials have started
        self.submissions: list[list[int]] = []  # the trials of each start() call

    @contextlib.contextmanager
    def events(self, on_reports, on_log, on_checkpoint, on_outcome, on_utilization):
        self.on_outcome = on_outcome
        yield

    def place(self, trial_id, behind=0):
        return "anywhere"

    def queues_behind(self, parallel):
        return True

    def start(self, starts, notify) -> list[RunningTrial]:
        self.submissions.append([spec.trial_id for spec, _ in starts])
        trials = []
        for spec, _ in starts:
            self.started.append(spec.trial_id)
            self.in_flight.add(spec.trial_id)
            self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
            trial = self.trials[spec.trial_id] = RunningTrial(spec.trial_id)
            trials.append(trial)
            behaviour = self.behaviour[spec.trial_id] = self.script(spec)
            if isinstance(behaviour, Outcome):
                self.on_outcome(behaviour)  # as the event channel would, from its own thread
            elif behaviour == TASK_FAILS:
                notify(TaskEnded(spec.trial_id, 0, "failed task"))  # as a task's done-callback would
        return trials

    def stop(self, trial_ids):
        self.stops.append(trial_ids)
        for trial_id in trial_ids if trial_ids is not None else list(self.in_flight):
            if self.behaviour.get(trial_id) == RUNS_UNTIL_STOPPED:
                self.on_outcome(Outcome(trial_id, "a", TrialState.PRUNED, last={"acc": 0.1}, steps=3))

    def settle(self, trial, event):
        if isinstance(event, TaskEnded):
            return Outcome.lost(trial.trial_id, TrialState.FAILED, f"{event.task} on Dask", ErrorKind.LOST)
        return event

    def poll(self, trial, now):
        return None

    def abandon(self, trial, why):
        self.cancel(trial)
        return Outcome.lost(trial.trial_id, TrialState.STOPPED, f"stopped: {why}", ErrorKind.ABANDONED)

    def cancel(self, trial):
        self.cancelled.add(trial.trial_id)

    def finished(self, trial, outcome):
        self.in_flight.discard(trial.trial_id)
        return None

    def lost(self):
        if self.gone_after is not None and len(self.started) >= self.gone_after:
            return "lost the scheduler"
        return None

    def tidy(self):
        pass

    def wind_down(self):
        pass


class ListSource:
    def __init__(self, n: int, prune: set[int] = frozenset()) -> None:
        self.ids = list(range(n))
        self.prunes = bool(prune)
        self.to_prune = prune
        self.told: list[tuple[int, TrialState]] = []
        self.asked = 0

    def next_trial(self):
        if not self.ids:
            return None
        self.asked += 1
        trial_id = self.ids.pop(0)
        return TrialSpec(trial_id, {"x": trial_id}, {"label": f"t{trial_id}"})

    def remaining(self):
        return len(self.ids)

    def report(self, trial_id, rows):
        return trial_id in self.to_prune

    def tell(self, outcome):
        self.told.append((outcome.trial_id, outcome.state))


def completed(
    spec: TrialSpec, value: float | None = None, duration: float = 5.0, worker: str | None = None
) -> Outcome:
    """A trial that ran ``duration`` seconds on ``worker`` (long enough by default that none is queued ahead)."""
    returned = float(spec.trial_id) if value is None else value
    return Outcome(
        spec.trial_id, "a", TrialState.COMPLETED, returned=returned, duration=duration, worker=worker
    )


def make_loop(script, source, *, parallel=2, timeout=None, stop_grace=10.0, metric="acc"):
    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", Objective(metric, Direction.MAX)))
    launcher = FakeLauncher(script)
    loop = TrialLoop(
        launcher,
        source,
        record,
        record.definition.objective,
        parallel=parallel,
        stop=StopSignal(),
        timeout=timeout,
        poll_interval=0.01,
        idle_interval=0.0,
        stop_grace=stop_grace,
    )
    return loop, launcher, record


def test_trials_start_in_the_sources_order_never_more_than_parallel_at_once():
    source = ListSource(7)
    loop, launcher, record = make_loop(completed, source, parallel=3)
    loop.run()
    assert launcher.started == list(range(7))
    assert launcher.most_in_flight == 3
    assert sorted(source.told) == [(t, TrialState.COMPLETED) for t in range(7)]
    records = record.trial_records()
    assert [r.value for r in records] == [float(t) for t in range(7)]  # judged by the objective
    assert records[2].labels == {"label": "t2"} and records[2].params == {"x": 2}
    assert record.best().trial_id == 6


def test_trials_that_can_start_together_are_started_in_one_call():
    # The launcher submits each call's trials together (one graph update on the scheduler, not one per trial).
    loop, launcher, _ = make_loop(completed, ListSource(9), parallel=4)
    loop.run()
    assert launcher.submissions == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8],
    ]  # whole slots freed by outcomes that came together


def test_parallel_one_is_strictly_sequential():
    source = ListSource(4)
    loop, launcher, _ = make_loop(completed, source, parallel=1)
    loop.run()
    assert launcher.most_in_flight == 1


def test_a_stop_ends_the_running_trials_as_stopped_and_starts_no_more():
    source = ListSource(10)
    loop, launcher, record = make_loop(lambda spec: RUNS_UNTIL_STOPPED, source, parallel=2)
    stop_after_two = lambda: loop.stop.request() if len(launcher.started) == 2 else None  # noqa: E731
    loop.run(idle=stop_after_two)
    assert launcher.started == [0, 1] and source.asked == 2
    assert launcher.stops == [None]  # one broadcast to the whole experiment
    assert [r.state for r in record.trial_records()] == [TrialState.STOPPED, TrialState.STOPPED]
    # a stopped trial keeps its last reported value, as Optuna keeps a pruned trial's
    assert [r.value for r in record.trial_records()] == [0.1, 0.1]
    assert not loop.stop.timed_out


def test_a_pruned_trial_is_recorded_pruned_not_stopped():
    source = ListSource(3, prune={1})

    def script(spec):
        if spec.trial_id == 1:
            loop.events.put(ReportBatch(1, "a", [[0, {"acc": 0.0}, 0.0]]))  # as a report batch would arrive
            return RUNS_UNTIL_STOPPED
        return completed(spec)

    loop, launcher, record = make_loop(script, source)
    loop.run()
    assert launcher.stops == [[1]]
    states = {r.trial_id: r.state for r in record.trial_records()}
    assert states == {0: TrialState.COMPLETED, 1: TrialState.PRUNED, 2: TrialState.COMPLETED}
    assert record.trial(1).prune_decided_at is not None


def test_a_failed_trial_is_recorded_with_its_error_and_the_rest_go_on():
    source = ListSource(4)

    def script(spec):
        if spec.trial_id == 1:
            return Outcome(1, "a", TrialState.FAILED, error="Traceback: boom", error_kind=ErrorKind.TRIAL)
        return completed(spec)

    loop, launcher, record = make_loop(script, source)
    loop.run()
    failed = record.trial(1)
    assert failed.state is TrialState.FAILED and failed.error == "Traceback: boom"
    assert failed.error_kind is ErrorKind.TRIAL and failed.value is None
    assert (1, TrialState.FAILED) in source.told and len(launcher.started) == 4


def test_a_task_that_ends_without_an_outcome_is_settled_by_its_launcher():
    source = ListSource(3)
    loop, launcher, record = make_loop(
        lambda spec: TASK_FAILS if spec.trial_id == 1 else completed(spec), source
    )
    loop.run()
    failed = record.trial(1)
    assert failed.state is TrialState.FAILED and failed.error == "failed task on Dask"
    assert failed.error_kind is ErrorKind.LOST and (1, TrialState.FAILED) in source.told


def test_a_metric_never_reported_stops_the_run_at_the_first_completed_trial():
    source = ListSource(5)
    loop, launcher, record = make_loop(lambda spec: Outcome(spec.trial_id, "a", TrialState.COMPLETED), source)
    with pytest.raises(MetricError, match="neither returned nor reported metric 'acc'"):
        loop.run()
    assert record.trial(0).error_kind is ErrorKind.METRIC
    assert launcher.stops[-1] is None  # the workers are told to stop everything
    assert source.asked == 2  # nothing more started


def test_the_timeout_stops_the_run_and_trials_that_ignore_it_are_abandoned():
    source = ListSource(5)
    loop, launcher, record = make_loop(lambda spec: IGNORES_STOP, source, timeout=0.05, stop_grace=0.1)
    loop.run()
    assert loop.stop.timed_out and launcher.stops == [None]
    records = record.trial_records()
    assert [r.state for r in records] == [TrialState.STOPPED, TrialState.STOPPED]
    assert all(r.error_kind is ErrorKind.ABANDONED for r in records)
    assert "did not stop within the grace period" in records[0].error


def test_a_second_interrupt_abandons_the_running_trials_at_once():
    source = ListSource(3)
    loop, launcher, record = make_loop(lambda spec: IGNORES_STOP, source, stop_grace=60)

    def interrupt_twice():
        if len(launcher.started) == 2:
            loop.stop.interrupts = 2
            loop.stop.request()

    loop.run(idle=interrupt_twice)
    assert all("interrupted" in r.error for r in record.trial_records())


def test_a_callback_that_raises_aborts_the_run_and_cancels_what_runs():
    source = ListSource(3)
    loop, launcher, _ = make_loop(lambda spec: IGNORES_STOP, source)

    def broken_view():
        if launcher.started:
            raise RuntimeError("the view broke")

    with pytest.raises(RuntimeError, match="the view broke"):
        loop.run(idle=broken_view)
    assert launcher.cancelled == set(launcher.trials)


def test_outcomes_arriving_from_another_thread_are_handled_on_the_loops():
    source = ListSource(6)
    loop_thread: list[threading.Thread] = []

    def script(spec):
        # the outcome comes later, from a thread of its own, as the Dask IO thread delivers it
        threading.Timer(0.02, launcher.on_outcome, args=(completed(spec),)).start()
        return RUNS_UNTIL_STOPPED

    loop, launcher, record = make_loop(script, source)

    told_on = []
    original_tell = source.tell
    source.tell = lambda rec: (told_on.append(threading.current_thread()), original_tell(rec))
    loop_thread.append(threading.current_thread())
    loop.run()
    assert len(record.trial_records()) == 6
    assert set(told_on) == set(loop_thread)  # Optuna is only ever told from the loop's thread


def test_a_lost_cluster_ends_the_run_and_records_the_running_trials_as_interrupted():
    source = ListSource(10)
    loop, launcher, record = make_loop(
        lambda spec: RUNS_UNTIL_STOPPED if spec.trial_id else completed(spec), source
    )
    launcher.gone_after = 3
    with pytest.raises(ClusterLost, match="lost the scheduler"):
        loop.run()
    states = {r.trial_id: r.state for r in record.trial_records()}
    assert states == {0: TrialState.COMPLETED, 1: TrialState.INTERRUPTED, 2: TrialState.INTERRUPTED}
    assert record.trial(1).error == "lost the scheduler"
    assert launcher.started == [0, 1, 2]


def test_with_no_number_fixed_parallel_follows_what_the_cluster_can_run(monkeypatch):
    """A cluster that grows mid-run (follow() answers 1, then 3) gets more trials in flight as it grows."""
    monkeypatch.setattr(_loop, "FOLLOW_INTERVAL", 0.0)
    can_run = [1]
    in_flight: list[int] = []  # as each trial starts, how many run (itself included)

    def ends_after_30_ms(spec):
        in_flight.append(len(launcher.in_flight))
        if spec.trial_id == 4:
            can_run[0] = 3  # the cluster has grown
        threading.Timer(0.03, lambda: launcher.on_outcome(completed(spec))).start()

    loop, launcher, record = make_loop(ends_after_30_ms, ListSource(16), parallel=1)
    loop.follow = lambda: can_run[0]
    loop.run()
    assert in_flight[:5] == [1, 1, 1, 1, 1]  # one at a time while the cluster ran one
    assert max(in_flight) == 3
    assert len(record.trial_records()) == 16


class QueueingLauncher(FakeLauncher):
    """One worker slot per ``parallel``: trials queued ahead wait in order, and each begins when a trial ends
    (what the Dask launcher infers from the worker an outcome came from)."""

    def __init__(self, script) -> None:
        super().__init__(script)
        self.waiting: list[int] = []
        self.asked_behind: list[int] = []

    def place(self, trial_id, behind=0):
        self.asked_behind.append(behind)
        if behind:
            self.waiting.append(trial_id)
        return "anywhere"

    def finished(self, trial, outcome):
        super().finished(trial, outcome)
        if trial.trial_id in self.waiting:
            self.waiting.remove(trial.trial_id)
        return self.waiting.pop(0) if self.waiting else None


def run_queueing(n: int, duration: float, parallel: int = 2):
    """``n`` trials that each end 20 ms after they start, saying they took ``duration`` seconds. Returns the
    launcher, the record, and each trial's queued flag as it was sent, and at the moment its outcome arrived."""
    sent_queued: dict[int, bool] = {}
    queued_at_end: dict[int, bool] = {}

    def ends_soon(spec):
        def end():
            queued_at_end[spec.trial_id] = record.trial(spec.trial_id).queued
            launcher.on_outcome(completed(spec, duration=duration))

        threading.Timer(0.02, end).start()

    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", Objective("acc", Direction.MAX)))
    launcher = QueueingLauncher(ends_soon)
    loop = TrialLoop(
        launcher, ListSource(n), record, record.definition.objective, parallel=parallel, poll_interval=0.01
    )
    started = record.trial_started

    def spy(trial_id, params, labels, queued=False, **more):
        sent_queued[trial_id] = queued
        started(trial_id, params, labels, queued, **more)

    record.trial_started = spy
    loop.run()
    return launcher, record, sent_queued


def test_brief_trials_get_one_more_per_slot_queued_behind_the_running_ones():
    """Trials under BRIEF_TRIAL: once four have completed, one trial per slot waits on a worker, so the next
    starts when one ends instead of after a round trip to the kernel; the views count it queued until then."""
    launcher, record, sent_queued = run_queueing(14, duration=0.2)
    assert launcher.most_in_flight == 4  # parallel=2, and one queued behind each
    queued = [t for t, q in sent_queued.items() if q]
    assert queued and min(queued) >= 4  # only once 4 trials said they are brief
    assert all(
        behind == 1 for t, behind in zip(launcher.started, launcher.asked_behind, strict=True) if t in queued
    )
    # the last trials are not queued ahead: none waits behind a busy worker while another has nothing left
    assert not sent_queued[12] and not sent_queued[13]
    records = record.trial_records()
    assert all(r.state is TrialState.COMPLETED and not r.queued for r in records) and len(records) == 14
    assert record.counts()["queued"] == 0


def test_a_queued_trial_counts_as_queued_until_it_begins():
    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", Objective("acc", Direction.MAX)))
    record.trial_started(0, {"x": 0}, {})
    record.trial_started(1, {"x": 1}, {}, queued=True)
    counts = record.counts()
    assert counts["running"] == 1 and counts["queued"] == 1
    record.trial_began(1)
    assert record.counts()["running"] == 2 and record.counts()["queued"] == 0


@pytest.mark.parametrize("duration, parallel", [(5.0, 2), (0.2, 1)])
def test_long_trials_and_a_sequential_run_queue_nothing_ahead(duration, parallel):
    launcher, _, sent_queued = run_queueing(8, duration=duration, parallel=parallel)
    assert launcher.most_in_flight == parallel
    assert not any(sent_queued.values()) and set(launcher.asked_behind) == {0}


# --- the run's goals and watcher -------------------------------------------------------------------------------
class Watcher:
    """Writes down what it hears, as the run's callbacks would."""

    def __init__(self, wants_reports: bool = True) -> None:
        self.wants_reports = wants_reports
        self.heard: list[tuple] = []

    def trial_started(self, trial_id):
        self.heard.append(("start", trial_id))

    def trial_reported(self, trial_id, rows):
        self.heard.extend(("report", trial_id, step, metrics) for step, metrics, _ in rows)

    def trial_ended(self, trial_id):
        self.heard.append(("end", trial_id))


def reports_then_runs(acc_by_trial):
    """A trial that reports acc 0.1, 0.5, ``acc_by_trial[id]`` (steps 0-2), then runs until told to stop; its
    outcome says it was stopped with that last acc."""

    def script(spec):
        acc = acc_by_trial[spec.trial_id]
        rows = [[0, {"acc": 0.1}, 0.0], [1, {"acc": 0.5, "loss": 1.0}, 0.0], [2, {"acc": acc}, 0.0]]
        loop._reports_arrived(ReportBatch(spec.trial_id, "a", rows))  # as the IO thread would
        return RUNS_UNTIL_STOPPED

    loop = None

    def bind(the_loop):
        nonlocal loop
        loop = the_loop

    return script, bind


def stop_on_its_own(launcher):
    """Outcomes for stopped trials carry their last reports (0.9): as a worker's TrialPruned would."""

    def stop(trial_ids):
        launcher.stops.append(trial_ids)
        for trial_id in trial_ids if trial_ids is not None else list(launcher.in_flight):
            if launcher.behaviour.get(trial_id) == RUNS_UNTIL_STOPPED:
                last = {"acc": launcher.last_acc[trial_id]}
                launcher.on_outcome(Outcome(trial_id, "a", TrialState.PRUNED, last=last, steps=3))

    launcher.stop = stop


def goal_loop(acc_by_trial, *, metric="acc", mode=Direction.MAX, scope="last", parallel=1, **loop_options):
    script, bind = reports_then_runs(acc_by_trial)
    objective = Objective(metric, mode, scope)
    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", objective))
    launcher = FakeLauncher(script)
    launcher.last_acc = acc_by_trial
    stop_on_its_own(launcher)
    source = ListSource(len(acc_by_trial))
    loop = TrialLoop(
        launcher, source, record, objective, parallel=parallel, poll_interval=0.01, **loop_options
    )
    bind(loop)
    return loop, launcher, record, source


def test_a_trial_meeting_the_stop_rule_is_stopped_and_ends_completed_with_its_value():
    from jupyter_dist.trials import StopRule

    rule = StopRule.of({"acc": 0.9}, Objective("acc"))
    loop, launcher, record, source = goal_loop({0: 0.95, 1: 0.2}, stop_rule=rule, timeout=0.5, stop_grace=1)
    loop.run()
    assert launcher.stops == [[0], None]  # trial 0 told to stop as a pruned trial is; trial 1 at the timeout
    first = record.trial(0)
    assert (
        first.state is TrialState.COMPLETED and first.value == 0.95
    )  # its last report, as a completed trial's
    assert (0, TrialState.COMPLETED) in source.told  # the sampler hears a completed trial
    assert record.trial(1).state is TrialState.STOPPED  # 0.2 never met the rule


def test_reports_reach_the_loop_only_when_something_needs_them():
    from jupyter_dist.trials import StopRule

    def needs(**options):
        loop, *_ = goal_loop({0: 0.5}, **options)
        return loop.hears_reports

    assert not needs()  # a source that does not prune, nothing else: the reports' cost is as before
    assert needs(stop_rule=StopRule.of({"acc": 1.0}, Objective("acc")))
    assert needs(scope="max")
    assert needs(watcher=Watcher())
    assert not needs(watcher=Watcher(wants_reports=False))


def test_the_stop_rule_compares_the_minimised_objective_the_other_way():
    from jupyter_dist.trials import StopRule

    rule = StopRule.of({"loss": 0.2, "acc": 0.9}, Objective("loss", Direction.MIN))
    assert rule.met(0, {"loss": 0.1}) and not rule.met(0, {"loss": 0.3})  # the objective, mode min: <=
    assert rule.met(0, {"acc": 0.95}) and not rule.met(0, {"acc": 0.5})  # any other metric: >=, as Ray
    assert StopRule.of({"loss": 0.2}, Objective("loss", Direction.MAX)).met(0, {"loss": 0.3})
    called = []
    rule = StopRule.of(lambda trial_id, metrics: called.append((trial_id, metrics)) or True, Objective("acc"))
    assert rule.met(3, {"acc": 0.5}) and called == [(3, {"acc": 0.5})]


@pytest.mark.parametrize(
    "stop, message",
    [
        ({3: 0.9}, "the key 3 is not a metric's name"),
        ({"acc": "high"}, "the threshold of 'acc' is 'high'; give a number"),
        ({"acc": True}, "the threshold of 'acc' is True"),
        ({}, "stop={}: give {metric: threshold}"),
        ("acc", "stop='acc': give {metric: threshold}"),
    ],
)
def test_a_malformed_stop_rule_is_refused_naming_it(stop, message):
    from jupyter_dist.trials import StopRule

    with pytest.raises(ValueError, match=re.escape(message)):
        StopRule.of(stop, Objective("acc"))


def test_a_completed_trial_at_the_target_ends_the_run_and_stops_the_running_ones():
    # Trial 0 runs; trial 1 completes at 0.8 (short of 0.9), trial 2 at 0.95 reaches it; 3-5 never start.
    values = {1: 0.8, 2: 0.95}

    def script(spec):
        if spec.trial_id in values:
            return completed(spec, value=values[spec.trial_id])
        return RUNS_UNTIL_STOPPED

    source = ListSource(6)
    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", Objective("acc")))
    launcher = FakeLauncher(script)
    loop = TrialLoop(
        launcher, source, record, record.definition.objective, parallel=2, poll_interval=0.01, target=0.9
    )
    loop.run()
    assert launcher.started == [0, 1, 2]
    assert loop.target_reached == "target acc >= 0.9 reached by trial 2 (acc=0.95)"
    assert loop.stop.requested and not loop.stop.timed_out
    states = {r.trial_id: r.state for r in record.trial_records()}
    assert states == {0: TrialState.STOPPED, 1: TrialState.COMPLETED, 2: TrialState.COMPLETED}


def test_a_minimised_target_is_reached_from_below():
    objective = Objective("loss", Direction.MIN)
    assert objective.reaches(0.1, 0.2) and objective.reaches(0.2, 0.2) and not objective.reaches(0.3, 0.2)
    assert Objective("acc").reaches(0.9, 0.9) and not Objective("acc").reaches(0.8, 0.9)


def test_the_pruner_is_given_the_scope_and_the_trial_ends_valued_by_it():
    """Scope "max": reports 0.1, 0.5, 0.3; the pruner sees 0.1, 0.5, 0.5 and the trial is valued 0.5."""
    seen = []

    class Recording(ListSource):
        def report(self, trial_id, rows):
            seen.extend((step, metrics["acc"]) for step, metrics, _ in rows if "acc" in metrics)
            return False

    def script(spec):
        rows = [[0, {"acc": 0.1}, 0.0], [1, {"acc": 0.5, "loss": 2.0}, 0.0], [2, {"acc": 0.3}, 0.0]]
        loop._reports_arrived(ReportBatch(spec.trial_id, "a", rows))
        return Outcome(spec.trial_id, "a", TrialState.COMPLETED, last={"acc": 0.3}, steps=3)

    source = Recording(1, prune={99})
    objective = Objective("acc", Direction.MAX, "max")
    record = InMemoryRecord(ExperimentDefinition("hpo", "fake", objective))
    loop = TrialLoop(FakeLauncher(script), source, record, objective, parallel=1, poll_interval=0.01)
    loop.run()
    assert seen == [(0, 0.1), (1, 0.5), (2, 0.5)]
    assert record.trial(0).value == 0.5
    assert [(s, m["acc"]) for _, _, s, _, m in _rows(record)] == [(0, 0.1), (1, 0.5), (2, 0.3)]  # stored raw


def _rows(record):
    return [(t, a, step, sent, metrics) for t, a, rows in record._batches for step, metrics, sent in rows]


def test_the_watcher_hears_starts_reports_and_ends_in_order_on_the_loops_thread():
    watcher = Watcher()
    heard_on = []
    trial_started = watcher.trial_started
    watcher.trial_started = lambda t: (heard_on.append(threading.current_thread()), trial_started(t))
    loop, launcher, record, source = goal_loop({0: 0.5, 1: 0.6}, watcher=watcher, timeout=0.3, stop_grace=1)
    loop.run()
    # trial 0 runs until the timeout stops it (parallel=1), and trial 1 never starts
    assert watcher.heard == [
        ("start", 0),
        ("report", 0, 0, {"acc": 0.1}),
        ("report", 0, 1, {"acc": 0.5, "loss": 1.0}),
        ("report", 0, 2, {"acc": 0.5}),
        ("end", 0),
    ]
    assert record.trial(0).state is TrialState.STOPPED
    assert set(heard_on) == {threading.current_thread()}
