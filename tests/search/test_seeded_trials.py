"""Seeded trials, on the real LocalCluster: a trial's Python random, NumPy and torch draws follow from the
experiment's seed and the trial, so the same seed gives the same values trial by trial; without seed= one is drawn
and recorded; a data-parallel trial's ranks, a PBT member's segments and an ablation's repeats are seeded by what
identifies them."""

from __future__ import annotations

import subprocess
import sys

import pytest

import jupyter_dist as jd
from jupyter_dist import space
from jupyter_dist.ablation import AblationSource, plan_study
from jupyter_dist.population import Explorer, PopulationSearch
from jupyter_dist.protocol import Direction, Objective, derive_seed


def draws(x=0.0):
    """What a training function draws without saying so: Python's random, NumPy's and torch's global generators."""
    import random

    import numpy as np
    import torch

    jd.report(py=random.random(), np=float(np.random.rand()), torch=float(torch.rand(1)))
    return x


def drawn(exp) -> list[tuple]:
    """Each trial's parameter, seed and draws, by trial id."""
    records = sorted(exp.trial_records(), key=lambda r: r.trial_id)
    return [(r.params["x"], r.seed, r.last["py"], r.last["np"], r.last["torch"]) for r in records]


def test_the_same_seed_gives_the_same_draws_trial_by_trial(run_hpo):
    searched = {"x": space.uniform(0, 1)}
    first = run_hpo(draws, searched, trials=4, metric="x", seed=11, parallel=2, name="a")
    again = run_hpo(draws, searched, trials=4, metric="x", seed=11, parallel=2, name="b")
    assert first.seed == again.seed == 11
    assert drawn(first) == drawn(again)
    # each trial its own seed, from the experiment's and its id, so its own draws
    assert list(first.trials.sort_values("trial_id").seed) == [derive_seed(11, i) for i in range(4)]
    assert len({row[2] for row in drawn(first)}) == 4 and None not in {row[1] for row in drawn(first)}
    other = run_hpo(draws, searched, trials=4, metric="x", seed=12, parallel=2, name="c")
    assert not {row[2] for row in drawn(other)} & {row[2] for row in drawn(first)}


def test_without_a_seed_one_is_drawn_and_recorded_and_reruns_the_same(run_hpo):
    searched = {"x": space.uniform(0, 1)}
    unseeded = run_hpo(draws, searched, trials=3, metric="x", parallel=1, name="drawn")
    assert isinstance(unseeded.seed, int)
    assert jd.load("drawn").seed == unseeded.seed  # recorded in the store
    assert list(jd.load("drawn").trials.sort_values("trial_id").seed) == [
        derive_seed(unseeded.seed, i) for i in range(3)
    ]
    rerun = run_hpo(draws, searched, trials=3, metric="x", parallel=1, seed=unseeded.seed, name="rerun")
    assert drawn(rerun) == drawn(unseeded)


def test_a_resumed_run_goes_on_with_its_drawn_seed(run_hpo):
    searched = {"x": space.uniform(0, 1)}
    first = run_hpo(draws, searched, trials=2, metric="x", parallel=1, name="goes-on")
    resumed = run_hpo(draws, searched, trials=4, metric="x", parallel=1, name="goes-on", resume=True)
    assert resumed.seed == first.seed
    assert list(resumed.trials.sort_values("trial_id").seed) == [derive_seed(first.seed, i) for i in range(4)]


def ranks_draw():
    import random

    return {"rank": jd.rank(), "py": random.random()}


def test_each_rank_of_a_data_parallel_run_draws_from_its_own_seed(run_ddp):
    exp = run_ddp(ranks_draw, workers=2)
    assert exp.state == "completed", exp.error
    trial_seed = derive_seed(exp.seed, 0)
    assert exp.trials.seed.tolist() == [trial_seed]
    import random

    expected = [random.Random(derive_seed(trial_seed, rank)).random() for rank in range(2)]
    assert [r["py"] for r in exp.trial_records()[0].rank_results] == expected


def test_pbt_segments_are_seeded_by_member_and_segment_not_by_trial_id():
    searched = {"lr": space.loguniform(1e-4, 1e-1)}
    population = PopulationSearch(
        searched,
        population=3,
        objective=Objective("v", Direction.MAX),
        perturbation_interval=5,
        quantile=0.25,
        max_steps=20,
        explorer=Explorer({"lr": searched["lr"]}, 0.25, 4),
        seed=4,
    )
    specs = [population.next_trial() for _ in range(3)]
    assert [s.seed for s in specs] == [derive_seed(4, member, 4) for member in range(3)]


def pair(features=("a", "b"), seed=0):
    return len(features)


def test_every_variant_of_an_ablation_repeat_draws_what_its_baseline_drew():
    study = plan_study(
        pair, features=["a", "b"], modules=None, flags=None, groups=None, repeats=2, params={}, seed=3
    )
    source = AblationSource(study, seed=3)
    specs = []
    while (spec := source.next_trial()) is not None:
        specs.append(spec)
    by_repeat: dict[int, set[int]] = {}
    for spec in specs:
        by_repeat.setdefault(spec.labels["repeat"], set()).add(spec.seed)
    assert by_repeat == {0: {derive_seed(3, 0)}, 1: {derive_seed(3, 1)}}


def test_torch_imported_inside_the_trial_is_seeded_as_it_is_imported():
    # A fresh interpreter: the function imports torch itself, after the trial's seeding.
    code = """
import sys
from jupyter_dist.trials._seeding import seeded
assert "torch" not in sys.modules
with seeded(123):
    import torch
    inside = torch.rand(3).tolist()
torch.manual_seed(123)
assert inside == torch.rand(3).tolist(), inside
assert not any(type(f).__name__ == "_SeedTorchOnImport" for f in sys.meta_path)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_other_threads_drawing_meanwhile_change_nothing_of_the_trials_draws():
    # On a worker, Dask's event loop samples with random.sample (dask.sizeof) while a trial runs.
    import random
    import threading

    import numpy as np

    from jupyter_dist.trials._seeding import seeded

    busy = threading.Event()
    done = threading.Event()

    def dask_like():
        while not done.is_set():
            random.sample(range(100), 5)
            np.random.rand()
            busy.set()

    other = threading.Thread(target=dask_like)
    other.start()
    try:
        assert busy.wait(10)
        with seeded(5):
            drawn = [random.random() for _ in range(1000)], np.random.rand(1000).tolist()
    finally:
        done.set()
        other.join()
    own = random.Random(5)
    assert drawn[0] == [own.random() for _ in range(1000)]
    assert drawn[1] == np.random.RandomState(5).rand(1000).tolist()
    # the process's own generator was not reseeded: a draw outside goes on from where the other thread left it
    assert random.random() != random.Random(5).random()


@pytest.mark.parametrize("seed", [0, 2**32 - 1, 2**40])
def test_derived_seeds_fit_every_generator(seed):
    import numpy as np

    derived = derive_seed(seed, 7)
    assert 0 <= derived < 2**32
    np.random.seed(derived)  # NumPy's legacy generator takes nothing larger


def test_a_trial_starting_while_another_thread_imports_torch_waits_for_it_then_seeds_it():
    # Two trials in one worker process (a worker of 2 threads): the first imports torch, the second starts while
    # torch's __init__ still runs, and finds a module in sys.modules that is not whole yet.
    code = """
import sys, threading, time
from jupyter_dist.trials._seeding import seeded
importer = threading.Thread(target=lambda: __import__("torch"))
importer.start()
while "torch" not in sys.modules:
    time.sleep(0.0005)
assert getattr(sys.modules["torch"].__spec__, "_initializing", False), "torch was whole already"
with seeded(9):
    import torch
    inside = torch.rand(2).tolist()
importer.join()
torch.manual_seed(9)
assert inside == torch.rand(2).tolist(), inside
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
