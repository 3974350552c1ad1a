"""A trial that runs out of host memory, on the real LocalCluster: its cause said and kept, not retried."""

import io
import re

import jupyter_dist as jd
from jupyter_dist.widgets import TextView


def train(batch_size=64):
    if batch_size > 256:
        # A real MemoryError: 1 PiB is past any machine's address space, so it is refused before a page is touched.
        bytearray(1 << 50)
    jd.report(step=0, v=1.0 / batch_size)
    return 1.0 / batch_size


def test_a_trial_out_of_host_memory_fails_with_its_cause_is_not_retried_and_is_counted(client, run_hpo):
    import optuna

    told = []

    class Listening(optuna.samplers.RandomSampler):
        def after_trial(self, study, trial, state, values):
            told.append(state.name)

    out = io.StringIO()
    exp = run_hpo(
        train,
        {"batch_size": jd.space.choice([64, 512, 1024])},
        trials=3,
        metric="v",
        sampler=Listening(),
        enqueue=[{"batch_size": 64}, {"batch_size": 512}, {"batch_size": 1024}],
        max_failures=2,  # spent on nothing: at the same parameters it would run out again
        progress=lambda e: TextView(e, stream=out),
    )
    t = exp.trials.set_index("params_batch_size")
    assert list(t.state) == ["completed", "failed", "failed"]
    assert list(t.error_kind) == [None, "memory", "memory"]
    assert list(t.attempts) == [1, 1, 1]
    cause, *traceback = t.loc[512, "error"].splitlines()
    assert re.fullmatch(r"out of memory on the host \(peak RSS [\d.]+ [MG]iB\)", cause), cause
    assert traceback[-1] == "MemoryError"  # the traceback follows its cause
    assert sorted(told) == ["COMPLETE", "FAIL", "FAIL"]

    said = "2 trials ran out of memory (at batch_size=512, 1024)"
    assert said in exp.status_line()
    assert list(exp.summary().error_kind) == [None, "memory", "memory"]
    printed = out.getvalue()
    assert said in printed and "trial 1 failed: out of memory on the host (peak RSS" in printed

    # What the REST API and the JupyterLab views read: each trial's error kind.
    from jupyter_dist.store import experiment_detail

    kinds = {t["params"]["batch_size"]: t["error_kind"] for t in experiment_detail(exp.record)["trials"]}
    assert kinds == {64: None, 512: "memory", 1024: "memory"}

    loaded = jd.load(exp.id)
    assert list(loaded.trials.set_index("params_batch_size").error_kind) == [None, "memory", "memory"]
    assert said in loaded.status_line()
