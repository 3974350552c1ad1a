"""Population-based training against independent trials from the same starting points: Ray Tune's PBT toy problem
and the digits MLP, and PBT's overhead. Target: PBT's best above the independent best in every toy run, by >= 30
points at the median. Method: docs/performance/pbt.md. Run: ``.venv/bin/python bench/bench_pbt.py``.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import _runner
from _common import median
from _runner import brief, local_cluster, measuring, timed
from _workloads import pbt_toy, train_digits_mlp_pbt, warm_digits_imports

N_WORKERS = 2
POPULATION = 8
TOY = {"steps": 300, "interval": 4, "seeds": (0, 1, 2, 3, 4), "lr": (0.0001, 0.02)}
DIGITS = {"epochs": 16, "interval": 2, "seeds": (0, 1, 2), "lr": (1e-4, 0.3), "momentum": (0.0, 0.95)}
COPIES = 50
TARGET_MARGIN = 30.0  # accuracy points of the toy problem


def compare(client, problem: tuple, seed: int, checkpoints: Path) -> dict:
    """One PBT run of ``problem`` (fn, space, metric, the argument its length is given to, that length, the
    perturbation interval) and the independent trials from its starting points."""
    import jupyter_dist as jd

    fn, space, metric, length, steps, interval = problem
    search = {**space, length: steps}
    quiet = {"parallel": N_WORKERS, "progress": False, "store": False, "checkpoint_dir": checkpoints}
    schedule = {"population": POPULATION, "perturbation_interval": interval, "max_steps": steps, "seed": seed}
    population, pbt_s = timed(jd.pbt, fn, search, metric=metric, cluster=client, **schedule, **quiet)
    starts = population.schedule.query(f"trial_id < {POPULATION}").sort_values("member")
    enqueue = [{name: row[f"params_{name}"] for name in space} for _, row in starts.iterrows()]
    same = {"trials": POPULATION, "metric": metric, "pruner": None, "enqueue": enqueue}
    independent, independent_s = _runner.hpo(fn, search, client, **same, **quiet)
    segments = len(population.trials)
    return {
        "seed": seed,
        "pbt_best": population.best.value,
        "independent_best": independent.best.value,
        "margin": population.best.value - independent.best.value,
        # None when no independent trial got anywhere (a toy run whose 8 starting rates are all far too large)
        "ratio": population.best.value / independent.best.value if independent.best.value > 0 else None,
        "pbt_s": pbt_s,
        "independent_s": independent_s,
        "segments": segments,
        "exploits": len(population.lineage),
        "restart_s_per_segment": (pbt_s - independent_s) * N_WORKERS / max(1, segments - POPULATION),
        "starting_points": enqueue,
        "best_member_params": population.best.params,
    }


def copy_timing(client, checkpoints: Path) -> dict:
    """The kernel's copy of one digits member's checkpoint, timed."""
    import jupyter_dist as jd
    from jupyter_dist.checkpoints import copy_checkpoint, latest

    quiet = {"cluster": client, "progress": False, "store": False, "checkpoint_dir": checkpoints / "one"}
    exp = jd.data_parallel(train_digits_mlp_pbt, workers=1, lr=0.05, momentum=0.9, epochs=1, **quiet)
    saved = latest(str(Path(exp.checkpoint()).parent))
    size = sum(f.stat().st_size for f in Path(saved.path).iterdir())
    targets = [str(checkpoints / "copies" / f"trial-{i}") for i in range(COPIES)]
    times = [timed(copy_checkpoint, saved, target, {"lr": 0.01})[1] for target in targets]
    return {"checkpoint_bytes": size, "median_s": median(times), "max_s": max(times), "copies": COPIES}


def _summary(runs: list[dict]) -> dict:
    ratios = [r["ratio"] for r in runs if r["ratio"] is not None]
    return {
        "pbt_best_median": median([r["pbt_best"] for r in runs]),
        "independent_best_median": median([r["independent_best"] for r in runs]),
        "margin_median": median([r["margin"] for r in runs]),
        "margin_min": min(r["margin"] for r in runs),
        "ratio_median": median(ratios) if ratios else None,
        "ratio_min": min(ratios) if ratios else None,
        "pbt_s_median": median([r["pbt_s"] for r in runs]),
        "independent_s_median": median([r["independent_s"] for r in runs]),
        "wall_ratio_median": median([r["pbt_s"] / r["independent_s"] for r in runs]),
        "pbt_wins": sum(r["pbt_best"] > r["independent_best"] for r in runs),
        "runs": len(runs),
    }


def main() -> dict:
    from jupyter_dist import space

    parameters = _runner.constants("POPULATION", "TOY", "DIGITS", "COPIES", workers=N_WORKERS)
    toy_space = {"lr": space.uniform(*TOY["lr"])}
    mlp_space = {"lr": space.loguniform(*DIGITS["lr"]), "momentum": space.uniform(*DIGITS["momentum"])}
    # as compare() takes a problem: fn, space, metric, its length's argument, that length, the interval
    toy = (pbt_toy, toy_space, "accuracy", "max_steps", TOY["steps"], TOY["interval"])
    digits = (train_digits_mlp_pbt, mlp_space, "val_acc", "epochs", DIGITS["epochs"], DIGITS["interval"])
    problems = {"toy": toy, "digits": digits}
    with (
        measuring("pbt", parameters, wall=False) as result,
        local_cluster(N_WORKERS, timeout=None) as client,
        tempfile.TemporaryDirectory() as folder,
    ):
        client.run(warm_digits_imports)
        root = Path(folder)
        runs: dict[str, list[dict]] = {"toy": [], "digits": []}
        for name, seeds in (("toy", TOY["seeds"]), ("digits", DIGITS["seeds"])):
            for seed in seeds:
                runs[name].append(compare(client, problems[name], seed, root / f"{name}-{seed}"))
                print(brief(f"{name} seed {seed}", runs[name][-1]), flush=True)
        toy_runs, digits_runs = runs["toy"], runs["digits"]
        copies = copy_timing(client, root)
        toy, digits = _summary(toy_runs), _summary(digits_runs)
        restart = [r["restart_s_per_segment"] for r in toy_runs]
        result.update(
            toy=toy | {"runs_detail": toy_runs},
            digits=digits | {"runs_detail": digits_runs},
            overhead={
                "copy_per_exploit": copies,
                "restart_s_per_segment_median": median(restart),
                "restart_s_per_segment_spread": statistics.pstdev(restart) if len(restart) > 1 else 0.0,
            },
            target=f"toy: PBT's best above the independent best in every run, by >= {TARGET_MARGIN:g} at the median",
            met=toy["pbt_wins"] == toy["runs"] and toy["margin_median"] >= TARGET_MARGIN,
        )
    return result


if __name__ == "__main__":
    quick = {
        "TOY": TOY | {"steps": 40, "seeds": (0,)},
        "DIGITS": DIGITS | {"epochs": 4, "seeds": (0,)},
        "COPIES": 5,
    }
    _runner.main("pbt", main, quick=quick)
