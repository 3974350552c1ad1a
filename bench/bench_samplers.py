"""Samplers and pruners side by side, the figures of docs/choosing.md. Each sampler ``hpo()`` offers for one
objective (random, tpe, gp, cmaes, and grid over a 4^6 lattice) on the 6-d Hartmann function, 100 trials one at a
time, seeds 0-4: the median distance to the minimum after 20, 50 and 100 trials, and the sampler's own time a
trial. The pruners (asha, median, hyperband, None, and asha with 4x the trials) under TPE on synthetic learning
curves that cross, seeds 0-2: the steps run and the true final value of the configuration each run picks. Several
objectives (random, tpe, nsga2, nsga3) on ZDT1, seeds 0-2: the share of the true front's hypervolume after 20 to
200 trials. And the trials each learning sampler draws at random before it models the space, read from the
installed Optuna. No target. Method: docs/choosing.md. Run: ``.venv/bin/python bench/bench_samplers.py``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import time
import warnings

import _runner
from _common import median
from _runner import interleave, local_cluster, measuring
from _workloads import hartmann6

N_WORKERS = 2
# One objective: every sampler, one trial at a time (each asked with every earlier result told: parallel=1 is
# strictly sequential in the trial loop, see docs/performance/warm-start.md), on one of the two workers.
SAMPLERS = ("random", "tpe", "gp", "cmaes", "grid")
SEEDS = (0, 1, 2, 3, 4)
BUDGETS = (20, 50, 100)
HARTMANN_MINIMUM = -3.32237
GRID_LEVELS = (0.125, 0.375, 0.625, 0.875)  # sampler="grid" searches choices: a 4^6 lattice of [0, 1]^6
# Pruners: TPE (hpo()'s default sampler) with each pruner, 2 trials at a time, on synthetic learning curves; and
# ASHA given as many trials as its saved steps pay for (about the no-pruner run's steps).
PRUNER_SEEDS = (0, 1, 2)
PRUNER_TRIALS = 64
PRUNER_RUNS = {  # label: (pruner, trials as a multiple of PRUNER_TRIALS)
    "asha": ("asha", 1),
    "median": ("median", 1),
    "hyperband": ("hyperband", 1),
    "none": (None, 1),
    "asha_4x_trials": ("asha", 4),
}
STEPS = 27  # each curve's length, and max_steps
CURVE_SLEEP_S = 0.005  # a step
CURVE_NOISE = 0.01  # the standard deviation of each report's noise
LR = (1e-4, 1.0)
DROPOUT = (0.0, 0.8)
# Several objectives: ZDT1 in 6 variables, both minimised; its true front is f2 = 1 - sqrt(f1), f1 in [0, 1].
SEVERAL_SAMPLERS = ("random", "tpe", "nsga2", "nsga3")
SEVERAL_SEEDS = (0, 1, 2)
SEVERAL_BUDGETS = (20, 50, 100, 200)
ZDT1_REFERENCE = (1.1, 5.0)
# The argument of each learning sampler that sets how many trials it draws before it models the space.
STARTUP_ARGUMENTS = {
    "tpe": "n_startup_trials",
    "gp": "n_startup_trials",
    "cmaes": "n_startup_trials",
    "nsga2": "population_size",
    "nsga3": "population_size",
}


# --- run on the workers (defined here so cloudpickle ships them by value) ----------------------------------
def curve_values(lr, dropout):
    """A synthetic validation accuracy, step by step: it rises to a final value set by lr and dropout (best near
    lr = 10^-2.5, dropout = 0.3), faster with a larger lr, so curves cross; noise seeded by the configuration."""
    import random

    u = math.log10(lr)
    final = 0.97 - 0.05 * (u + 2.5) ** 2 - 0.3 * (dropout - 0.3) ** 2
    tau = 3.0 * 10 ** (-(u + 2.0) / 4.0)  # in steps: 1 at lr = 1, 3 at 1e-2, 9.5 at 1e-4
    noise = random.Random(f"{lr!r},{dropout!r}")
    return [final * (1 - math.exp(-(s + 1) / tau)) + noise.gauss(0.0, CURVE_NOISE) for s in range(STEPS)]


def learning_curve(lr, dropout):
    import time

    import jupyter_dist

    for step, value in enumerate(curve_values(lr, dropout)):
        time.sleep(CURVE_SLEEP_S)
        jupyter_dist.report(step=step, acc=value)


def zdt1(x0, x1, x2, x3, x4, x5):
    g = 1 + 9 * (x1 + x2 + x3 + x4 + x5) / 5
    return {"f1": x0, "f2": g * (1 - math.sqrt(x0 / g))}


# --- kernel side -------------------------------------------------------------------------------------------
def true_final(lr: float, dropout: float) -> float:
    """A configuration's final accuracy without the noise: what a search's pick is worth."""
    u = math.log10(lr)
    final = 0.97 - 0.05 * (u + 2.5) ** 2 - 0.3 * (dropout - 0.3) ** 2
    return final * (1 - math.exp(-STEPS / (3.0 * 10 ** (-(u + 2.0) / 4.0))))


def best_true_final(points: int = 801) -> float:
    """The largest ``true_final`` over the space, on a fine grid."""
    (lo, hi), (d_lo, d_hi) = LR, DROPOUT
    return max(
        true_final(10 ** (math.log10(lo) + i * (math.log10(hi) - math.log10(lo)) / (points - 1)), d)
        for i in range(points)
        for d in (d_lo + j * (d_hi - d_lo) / 80 for j in range(81))
    )


@contextlib.contextmanager
def search_time():
    """The kernel's seconds in the search's ask and tell (``OptunaSearch.next_trial``, ``.tell``): the sampler's
    own cost a trial, apart from running the trial."""
    from jupyter_dist.search import OptunaSearch

    spent = [0.0]
    originals = {name: getattr(OptunaSearch, name) for name in ("next_trial", "tell")}

    def timed(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - t0

        return wrapper

    for name, method in originals.items():
        setattr(OptunaSearch, name, timed(method))
    try:
        yield spent
    finally:
        for name, method in originals.items():
            setattr(OptunaSearch, name, method)


def in_order(exp) -> list:
    """The completed trials in the order they ended."""
    done = [r for r in exp.trial_records() if r.state == "completed" and r.value is not None]
    return sorted(done, key=lambda r: r.started + (r.duration or 0.0))


def one_sampler(client, sampler: str, seed: int) -> dict:
    """Hartmann-6, ``max(BUDGETS)`` trials one at a time: the best value after each budget, the sampler's time."""
    from jupyter_dist import space

    if sampler == "grid":
        search = {f"x{i}": space.choice(list(GRID_LEVELS)) for i in range(6)}
    else:
        search = {f"x{i}": space.uniform(0.0, 1.0) for i in range(6)}
    options = {
        "metric": "y",
        "mode": "min",
        "sampler": sampler,
        "pruner": None,
        "parallel": 1,
        "store": False,
    }
    with search_time() as spent:
        exp, wall = _runner.hpo(hartmann6, search, client, trials=max(BUDGETS), seed=seed, **options)
    values = [r.value for r in in_order(exp)]
    best = {str(b): min(values[:b]) for b in BUDGETS}
    return {
        "seed": seed,
        "trials": len(values),
        "best": best,
        "regret": {b: v - HARTMANN_MINIMUM for b, v in best.items()},
        "sampler_time_per_trial_s": spent[0] / len(values),
        "wall_s": wall,
    }


def lattice_best() -> dict:
    """The best point of the lattice sampler="grid" searches here: what a grid search could find at best."""
    import itertools

    values = [hartmann6(*point)["y"] for point in itertools.product(GRID_LEVELS, repeat=6)]
    return {"points": len(values), "best": min(values), "regret": min(values) - HARTMANN_MINIMUM}


def one_pruner(client, label: str, seed: int) -> dict:
    """TPE on the learning curves, 2 trials at a time, with PRUNER_RUNS[label]: the steps run (their share of
    every one of PRUNER_TRIALS trials run to the end) and what the pick is truly worth."""
    from jupyter_dist import space

    pruner, times = PRUNER_RUNS[label]
    search = {"lr": space.loguniform(*LR), "dropout": space.uniform(*DROPOUT)}
    options = {"metric": "acc", "mode": "max", "sampler": "tpe", "max_steps": STEPS, "parallel": N_WORKERS}
    exp, wall = _runner.hpo(
        learning_curve,
        search,
        client,
        trials=PRUNER_TRIALS * times,
        seed=seed,
        pruner=pruner,
        store=False,
        **options,
    )
    best = exp.best
    steps = int(exp.trials["steps"].sum())
    return {
        "seed": seed,
        "trials": PRUNER_TRIALS * times,
        "counts": exp.counts(),
        "best_value": best.value,
        "best_params": best.params,
        "best_true_final": true_final(best.params["lr"], best.params["dropout"]),
        "steps": steps,
        "step_share": steps / (PRUNER_TRIALS * STEPS),
        "wall_s": wall,
    }


def one_several(client, sampler: str, seed: int) -> dict:
    """ZDT1, ``max(SEVERAL_BUDGETS)`` trials one at a time: the share of the true front's hypervolume after
    each budget."""
    from jupyter_dist import space
    from jupyter_dist.search import hypervolume, non_dominated

    search = {f"x{i}": space.uniform(0.0, 1.0) for i in range(6)}
    options = {"metric": ["f1", "f2"], "mode": ["min", "min"], "pruner": None, "parallel": 1, "store": False}
    exp, wall = _runner.hpo(
        zdt1, search, client, trials=max(SEVERAL_BUDGETS), sampler=sampler, seed=seed, **options
    )
    vectors = [(r.value, r.last["f2"]) for r in in_order(exp)]  # the first objective is the value
    true_hv = true_front_hypervolume()
    share = {}
    for b in SEVERAL_BUDGETS:
        found = vectors[:b]
        share[str(b)] = hypervolume([found[i] for i in non_dominated(found)], ZDT1_REFERENCE) / true_hv
    return {"seed": seed, "trials": len(vectors), "hypervolume_share": share, "wall_s": wall}


def true_front_hypervolume() -> float:
    """The hypervolume of ZDT1's true front (f2 = 1 - sqrt(f1), 0 <= f1 <= 1) up to ZDT1_REFERENCE (r1 >= 1): the
    box r1 x r2 less the area under the front, the integral of 1 - sqrt(f1) over [0, 1], 1/3."""
    r1, r2 = ZDT1_REFERENCE
    return r1 * r2 - 1 / 3


def summarise(runs: list[dict], keys: tuple[str, ...], by_budget: tuple[str, ...] = ()) -> dict:
    """Medians over the seeds' runs of ``keys``, and of each budget's figure of ``by_budget``; the runs."""
    out: dict = {f"{key}_median": median([r[key] for r in runs]) for key in keys}
    for key in by_budget:
        budgets = runs[0][key]
        out[f"{key}_median"] = {b: median([r[key][b] for r in runs]) for b in budgets}
    return out | {"runs": runs}


def startup_trials() -> dict:
    """Each learning sampler as ``hpo()`` makes it: its Optuna class and the default of the argument that sets its
    random start (hpo() passes only the seed, and TPE's constant liar), read from the installed Optuna."""
    from jupyter_dist import space
    from jupyter_dist.search import make_sampler

    searched = {f"x{i}": space.uniform(0.0, 1.0) for i in range(6)}
    out = {}
    for name, argument in STARTUP_ARGUMENTS.items():
        with warnings.catch_warnings():  # NSGA-III's ExperimentalWarning
            warnings.simplefilter("ignore")
            cls = type(make_sampler(name, searched, seed=0))
        out[name] = {
            "optuna_class": cls.__name__,
            "argument": argument,
            "default": inspect.signature(cls).parameters[argument].default,
        }
    return out


def rounds(client, run, names: tuple, seeds: tuple) -> dict[str, list]:
    """``run(client, name, seed)`` for every name, a seed a round, the order turning each round; by name."""
    sides = {name: functools.partial(_side, run, client, name, seeds) for name in names}
    return interleave(len(seeds), sides, order="rotate")


def _side(run, client, name, seeds: tuple, round_: int) -> dict:
    return run(client, name, seeds[round_])


def main() -> dict:
    import optuna

    from jupyter_dist import space

    parameters = _runner.constants(
        "SAMPLERS",
        "SEEDS",
        "BUDGETS",
        "GRID_LEVELS",
        "PRUNER_SEEDS",
        "PRUNER_TRIALS",
        "STEPS",
        "CURVE_SLEEP_S",
        "CURVE_NOISE",
        "LR",
        "DROPOUT",
        "SEVERAL_SAMPLERS",
        "SEVERAL_SEEDS",
        "SEVERAL_BUDGETS",
        "ZDT1_REFERENCE",
        workers=N_WORKERS,
        curve="(0.97 - 0.05 (log10 lr + 2.5)^2 - 0.3 (dropout - 0.3)^2) (1 - exp(-(step+1)/tau)) + noise, "
        "tau = 3 * 10^(-(log10 lr + 2)/4)",
        zdt1="f1 = x0, g = 1 + 9 (x1 + ... + x5) / 5, f2 = g (1 - sqrt(f1 / g)); both minimised",
    )
    parameters["pruner_runs"] = {
        label: [p or "none", PRUNER_TRIALS * k] for label, (p, k) in PRUNER_RUNS.items()
    }
    with (
        measuring("samplers", parameters) as result,
        local_cluster(N_WORKERS, timeout=None) as client,
    ):
        # Warm-up: the trial loop, and each learning sampler's imports in the kernel (GP's torch).
        unit = {f"x{i}": space.uniform(0.0, 1.0) for i in range(6)}
        for sampler in ("tpe", "gp", "cmaes"):
            warm = {"metric": "y", "mode": "min", "pruner": None, "parallel": 1, "store": False}
            _runner.hpo(hartmann6, unit, client, trials=12, sampler=sampler, seed=0, **warm)
        single = rounds(client, one_sampler, SAMPLERS, SEEDS)
        pruning = rounds(client, one_pruner, tuple(PRUNER_RUNS), PRUNER_SEEDS)
        several = rounds(client, one_several, SEVERAL_SAMPLERS, SEVERAL_SEEDS)
        true_best = best_true_final()
        result.update(
            optuna_version=optuna.__version__,
            single={
                "problem": "6-d Hartmann, minimised over [0, 1]^6",
                "minimum": HARTMANN_MINIMUM,
                "budgets": list(BUDGETS),
                "grid_lattice": lattice_best(),
                "samplers": {
                    s: summarise(runs, ("sampler_time_per_trial_s", "wall_s"), ("best", "regret"))
                    for s, runs in single.items()
                },
            },
            pruners={
                "true_best_final": true_best,
                "trials": PRUNER_TRIALS,
                "steps": STEPS,
                "runs": {
                    p: summarise(runs, ("best_true_final", "step_share", "wall_s"))
                    | {
                        "regret_median": true_best - median([r["best_true_final"] for r in runs]),
                        "pruned_median": median([r["counts"]["pruned"] for r in runs]),
                        "completed_median": median([r["counts"]["completed"] for r in runs]),
                    }
                    for p, runs in pruning.items()
                },
            },
            several={
                "problem": "ZDT1 in 6 variables, both objectives minimised",
                "reference": list(ZDT1_REFERENCE),
                "true_front_hypervolume": true_front_hypervolume(),
                "budgets": list(SEVERAL_BUDGETS),
                "samplers": {
                    s: summarise(runs, ("wall_s",), ("hypervolume_share",)) for s, runs in several.items()
                },
            },
            startup=startup_trials(),
        )
    return result


if __name__ == "__main__":
    _runner.main(
        "samplers",
        main,
        quick={
            "SEEDS": (0,),
            "BUDGETS": (5, 10),
            "PRUNER_SEEDS": (0,),
            "PRUNER_TRIALS": 8,
            "SEVERAL_SEEDS": (0,),
            "SEVERAL_BUDGETS": (5, 10),
        },
    )
