"""What each trial used, sampled on its worker about once a second: through a real run, the store and load()."""

from __future__ import annotations

import math

import jupyter_dist as jd
from jupyter_dist import space


def busy_and_big(x=0.0, cpu_seconds=2.0):
    import time

    held = bytearray(b"\x01") * (200 << 20)  # written, so resident
    start, cpu = time.monotonic(), time.thread_time()
    s = 0.0
    # Busy until it has had cpu_seconds of a core, however long a machine busy with other work takes to give them:
    # the samples then always have CPU time to show.
    while time.thread_time() < cpu + cpu_seconds and time.monotonic() < start + 120:
        for _ in range(10_000):
            s += x * 2.0
    # The share of a core this thread had: less than 100 on a machine busy with other work.
    share = 100 * (time.thread_time() - cpu) / (time.monotonic() - start)
    jd.report(step=0, share=share)
    return {"v": s + len(held) * 0.0}


def test_a_busy_trial_is_sampled_with_its_cpu_and_memory_and_the_samples_survive_the_store(run_hpo):
    exp = run_hpo(busy_and_big, {"x": space.uniform(0, 1)}, trials=1, metric="v")
    frame = exp.utilization
    assert list(frame.columns) == ["trial_id", "time", "cpu_percent", "rss_mb", "gpu_util", "gpu_mem_mb"]
    mine = frame[frame.trial_id == 0]
    assert len(mine) >= 2, frame
    # Its CPU time over wall time, as the trial's own clock saw it (its process's other threads add little).
    share = exp.trial_records()[0].last["share"]
    # The samples' mean is near it, and (however small a share a loaded machine gave) not near nothing.
    assert abs(mine.cpu_percent.mean() - share) < 20 and mine.cpu_percent.mean() > share / 2, (share, frame)
    assert mine.rss_mb.max() >= 200, frame
    # No GPU on this machine (nor a trial holding one): NaN, not zero.
    assert mine.gpu_util.isna().all() and mine.gpu_mem_mb.isna().all()
    (rec,) = exp.trial_records()
    started = rec.started
    assert all(started <= t.timestamp() <= started + rec.duration + 1.5 for t in mine.time)

    loaded = jd.load(exp.id).utilization
    assert len(loaded) == len(frame)
    assert loaded.cpu_percent.tolist() == frame.cpu_percent.tolist()
    assert loaded.rss_mb.tolist() == frame.rss_mb.tolist()
    assert all(math.isnan(v) for v in loaded.gpu_util)
