"""What a sampler's history costs the kernel past 10,000 trials: for random, grid, QMC and TPE, ``OptunaSearch``
driven directly (no Dask, no store), one trial at a time (ask, then tell a completed value): the wall time of one
ask + tell at 1,000, 10,000 and 100,000 finished trials, and the kernel memory each finished trial leaves behind
(RSS growth between 10,000 and 100,000, after a garbage collection and ``malloc_trim``).

Random, grid (a 4 x 5 x 10 x 10 x 50 lattice: 100,000 points) and QMC run all 100,000 trials, timed in windows of
``WINDOW`` trials ending at each size. TPE costs time proportional to its history at every ask (~30 us per finished
trial on this machine), so running 100,000 of them would take days: its study is given each size's finished trials
at once (``tell_earlier``, as a warm start tells them), then ``TPE_ASKS`` asks + tells are timed at that size; its
memory is the RSS growth of those told trials. ``tpe_few_candidates`` is TPE with ``n_ei_candidates=8`` (Optuna's
default 24), ``tpe_window`` TPE with ``sampler_window=TPE_WINDOW`` (the newest 1,000 finished trials).
``tpe`` at 100,000 is measured, not extrapolated. No target. Run:
``.venv/bin/python bench/bench_sampler_history.py`` (``--quick``: 2,000 trials).
"""

from __future__ import annotations

import ctypes
import gc
import os
import time
import warnings

import _runner
from _runner import measuring

SIZES = (1_000, 10_000, 100_000)
WINDOW = 500  # the trials each cost at a size is the mean of (random, grid, QMC): those ending at that size
TPE_ASKS = 3  # asks + tells timed at each size for TPE
SAMPLERS = ("random", "grid", "qmc", "tpe", "tpe_few_candidates", "tpe_window")
TPE_WINDOW = 1_000  # tpe_window: hpo(sampler_window=TPE_WINDOW)
GRID = (4, 5, 10, 10, 50)  # choices of each argument: 100,000 points


def rss_bytes() -> int:
    """The process's RSS after a garbage collection, freed heap handed back (malloc_trim)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_search(name: str, trials: int):
    import optuna

    from jupyter_dist import space
    from jupyter_dist.protocol import Objective
    from jupyter_dist.search import OptunaSearch

    if name == "grid":
        searched = {f"g{i}": space.choice(list(range(n))) for i, n in enumerate(GRID)}
        sampler: object = "grid"
    else:
        searched = {"x": space.uniform(0, 1), "y": space.loguniform(1e-3, 1), "z": space.integer(0, 9)}
        sampler = {
            "random": "random",
            "tpe": "tpe",
            "tpe_window": "tpe",
            "qmc": optuna.samplers.QMCSampler(seed=0),
            "tpe_few_candidates": optuna.samplers.TPESampler(seed=0, constant_liar=True, n_ei_candidates=8),
        }[name]
    window = TPE_WINDOW if name == "tpe_window" else None
    return OptunaSearch(
        searched, trials=trials, objective=Objective("v"), sampler=sampler, pruner=None, seed=0, window=window
    )


def one_trial(search) -> None:
    from jupyter_dist.protocol import Outcome, TrialState

    spec = search.next_trial()
    value = sum(float(v) for v in spec.params.values())
    search.tell(Outcome(spec.trial_id, None, TrialState.COMPLETED, value=value))


def run_through(name: str, sizes: tuple[int, ...]) -> dict:
    """Every trial asked and told in turn up to the largest size."""
    search = make_search(name, sizes[-1])
    cost, rss, done = {}, {}, 0
    for size in sizes:
        while done < size - WINDOW:
            one_trial(search)
            done += 1
        t0 = time.perf_counter()
        while done < size:
            one_trial(search)
            done += 1
        cost[size] = (time.perf_counter() - t0) / WINDOW
        rss[size] = rss_bytes()
    return _figures(name, search, sizes, cost, rss)


def told_then_asked(name: str, sizes: tuple[int, ...]) -> dict:
    """Each size's finished trials told at once (drawn at random), then TPE_ASKS asks + tells timed."""
    import random

    import optuna

    search = make_search(name, sizes[-1] + TPE_ASKS * len(sizes))
    rng = random.Random(0)
    distributions = search.distributions
    cost, rss, told = {}, {}, 0
    for size in sizes:
        more = []
        while told < size:
            params = {"x": rng.random(), "y": 10 ** rng.uniform(-3, 0), "z": rng.randrange(10)}
            more.append(
                optuna.trial.create_trial(
                    params=params, distributions=distributions, value=sum(params.values())
                )
            )
            told += 1
        search.tell_earlier(more)
        del more
        t0 = time.perf_counter()
        for _ in range(TPE_ASKS):
            one_trial(search)
        cost[size] = (time.perf_counter() - t0) / TPE_ASKS
        told += TPE_ASKS
        rss[size] = rss_bytes()
    return _figures(name, search, sizes, cost, rss)


def _figures(name, search, sizes, cost, rss) -> dict:
    storage = search.study._storage
    held = len(storage.get_all_trials(search.study._study_id, deepcopy=False))
    first, last = sizes[-2], sizes[-1]
    return {
        "keeps_history": search.keeps_history,
        "ask_tell_ms": {str(size): 1e3 * cost[size] for size in sizes},
        "trials_held_by_the_study": held,
        "kernel_bytes_per_finished_trial": (rss[last] - rss[first]) / (last - first),
        "rss_mb": {str(size): rss[size] / 2**20 for size in sizes},
        "how": "told at once, then asked" if name.startswith("tpe") else "every trial asked and told",
    }


def measure() -> dict:
    warnings.simplefilter("ignore")  # QMCSampler is experimental
    parameters = _runner.constants("SIZES", "WINDOW", "TPE_ASKS", "SAMPLERS", "GRID", "TPE_WINDOW")
    with measuring("sampler_history", parameters) as result:
        samplers = {}
        for name in SAMPLERS:
            t0 = time.perf_counter()
            fn = told_then_asked if name.startswith("tpe") else run_through
            samplers[name] = fn(name, SIZES)
            samplers[name]["wall_s"] = time.perf_counter() - t0
            print(name, samplers[name], flush=True)
        result["samplers"] = samplers
    return result


if __name__ == "__main__":
    _runner.main(
        "sampler_history",
        measure,
        quick={"SIZES": (500, 1_000, 2_000), "WINDOW": 100, "TPE_ASKS": 2, "GRID": (4, 5, 10, 10)},
    )
