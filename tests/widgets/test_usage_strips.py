"""The live widget's strip per running trial: its newest utilisation sample and a CPU sparkline."""

import time

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.protocol import Objective, TrialState, UtilizationSample
from jupyter_dist.store import ExperimentDefinition, InMemoryRecord
from jupyter_dist.widgets._live import LiveView
from jupyter_dist.widgets._usage import MAX_STRIPS, SPARKS, sparkline


def sample(trial_id, at, cpu, rss=512.0, gpu_util=None, gpu_mem=None):
    return UtilizationSample(trial_id, "a0", at, cpu, rss, gpu_util, gpu_mem)


def test_a_running_trial_shows_its_newest_sample_and_a_sparkline_of_its_cpu():
    record = InMemoryRecord(ExperimentDefinition("hpo", "x", Objective("acc")))
    record.trial_started(0, {"lr": 0.1}, {})
    record.trial_started(1, {"lr": 0.2}, {})
    record.trial_started(2, {"lr": 0.3}, {}, queued=True)
    view = LiveView(jd.Experiment(record))
    view.draw()
    assert view.usage.html == ""  # nothing sampled yet: the strip takes no room
    record.utilization_arrived(sample(0, 1.0, 50.0))
    view.draw()
    record.utilization_arrived(sample(0, 2.0, 100.0, rss=20 * 1024))
    record.utilization_arrived(sample(1, 2.0, 12.0, gpu_util=87.0, gpu_mem=2310.0))
    view.draw()
    view.draw()  # a redraw with no new sample adds nothing to the sparkline
    lines = view.usage.html.split("<div data-trial=")[1:]
    assert len(lines) == 2
    assert "trial 0" in lines[0] and "CPU 100% · RSS 20.0 GB" in lines[0] and "GPU" not in lines[0]
    assert sparkline([50.0, 100.0]) in lines[0] and sparkline([50.0, 100.0]) == SPARKS[4] + SPARKS[-1]
    assert "CPU 12% · RSS 512 MB · GPU 87% · GPU mem 2,310 MB" in lines[1]
    record.trial(0).state = TrialState.COMPLETED  # (as trial_finished leaves it)
    view.draw()
    assert "trial 0" not in view.usage.html and "trial 1" in view.usage.html  # only the running ones


def test_the_strips_stop_at_a_screenful_and_count_the_rest():
    record = InMemoryRecord(ExperimentDefinition("hpo", "x", Objective("acc")))
    for trial_id in range(MAX_STRIPS + 5):
        record.trial_started(trial_id, {"lr": 0.1}, {})
        record.utilization_arrived(sample(trial_id, 1.0, 90.0))
    view = LiveView(jd.Experiment(record))
    view.draw()
    assert view.usage.html.count("<div data-trial=") == MAX_STRIPS
    assert "… and 5 more running trials" in view.usage.html


def busy(x=0.0):
    # Long enough for a sample or several (one a second), stopped by the view once its strip shows one.
    for step in range(1200):
        deadline = time.perf_counter() + 0.05
        while time.perf_counter() < deadline:  # CPU, so the sample has something to show
            pass
        jd.report(step=step, v=x)


def test_the_live_view_draws_a_strip_for_a_running_trial_of_a_real_run(client):
    drawn = []

    class Watching(LiveView):
        def draw(self):
            super().draw()
            if "CPU" in self.usage.html and not drawn:
                drawn.append(self.usage.html)
                self.exp.stop()  # seen: the run need not go on

    views = []

    def make(exp):
        views.append(Watching(exp))
        return views[-1]

    exp = jd.hpo(busy, {"x": space.uniform(0, 1)}, trials=1, metric="v", cluster=client, progress=make)
    assert exp.state == "stopped" and drawn, views[0].usage.html
    assert "trial 0" in drawn[0] and "RSS" in drawn[0] and " MB" in drawn[0]
    assert len(exp.utilization) >= 1
    assert views[0].usage.html == ""  # ended: no trial runs, no strip
