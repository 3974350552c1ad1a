"""The Pareto pruner: ``pruner="pareto"`` against ``pruner=None`` on two objectives with a known front, a grid
of 64 and multi-objective TPE (seeds 0-2): hypervolume, distance to the true front, steps.
Method: docs/performance/pruning.md, "Early stopping with several objectives". Run: ``.venv/bin/python
bench/bench_pareto.py``.
"""

from __future__ import annotations

import math

import _runner
from _common import median
from _runner import brief, local_cluster, measuring

N_WORKERS = 2
STEPS = 27
SLEEP_S = 0.005
GRID_X = [round(0.02 + k * (0.98 / 15), 4) for k in range(16)]
GRID_Y = [0.2, 0.4, 0.5, 0.8]
TPE_TRIALS = 64
TPE_SEEDS = (0, 1, 2)
REFERENCE = (1.1, 1.6)
TARGET_HV = 0.98
TARGET_STEPS = 0.60


def costs(x=0.5, y=0.5, steps=STEPS, pause=SLEEP_S):
    """Both minimised; reported every step, converging to the final values."""
    import random
    import time

    import jupyter_dist

    final_a, final_b = x, 1 - math.sqrt(x) + 4 * (y - 0.5) ** 2
    noise = random.Random(hash((x, y)))
    for step in range(steps):
        factor = 1 + 1 / (step + 1)
        wobble = 0.05 / (step + 1)
        time.sleep(pause)
        jupyter_dist.report(
            step=step,
            cost_a=final_a * factor + wobble * noise.random(),
            cost_b=final_b * factor + wobble * noise.random(),
        )
    return {"cost_a": final_a, "cost_b": final_b}


def measure(client, space, pruner, **search) -> dict:
    from jupyter_dist.search import hypervolume

    both = {"metric": ["cost_a", "cost_b"], "mode": ["min", "min"], "max_steps": STEPS, "parallel": N_WORKERS}
    exp, wall = _runner.hpo(costs, space, client, pruner=pruner, store=False, **both, **search)
    front = list(zip(exp.pareto.values_cost_a, exp.pareto.values_cost_b, strict=True))
    return {
        "hypervolume": hypervolume(front, REFERENCE),
        "front_size": len(front),
        "mean_distance_to_true_front": sum(b - (1 - math.sqrt(a)) for a, b in front) / max(1, len(front)),
        "steps": int(exp.trials.steps.sum()),
        "trials": len(exp.trials),
        "pruned": exp.counts()["pruned"],
        "wall_s": wall,
    }


def compared(client, space, **search) -> dict:
    """``measure`` without a pruner and with the Pareto pruner; the second's hypervolume, steps, wall over the
    first's."""
    runs = {label: measure(client, space, p, **search) for label, p in (("none", None), ("pareto", "pareto"))}
    none, pareto = runs["none"], runs["pareto"]
    out = {
        **runs,
        "hv_ratio": pareto["hypervolume"] / none["hypervolume"],
        "step_share": pareto["steps"] / none["steps"],
        "wall_ratio": pareto["wall_s"] / none["wall_s"],
    }
    shown = {k: out[k] for k in ("hv_ratio", "step_share")}
    print(brief(f"{search['sampler']} seed {search['seed']}", shown), flush=True)
    return out


def main() -> dict:
    from jupyter_dist import space

    parameters = _runner.constants("STEPS", "SLEEP_S", "REFERENCE", workers=N_WORKERS)
    parameters.update(grid={"x": GRID_X, "y": GRID_Y}, tpe={"trials": TPE_TRIALS, "seeds": TPE_SEEDS})
    with (
        local_cluster(N_WORKERS, timeout=None) as client,
        measuring("pareto", parameters, wall=False) as result,
    ):
        grid_space = {"x": space.choice(GRID_X), "y": space.choice(GRID_Y)}
        grid = compared(client, grid_space, trials=None, sampler="grid", seed=0)
        tpe_space = {"x": space.uniform(0.0, 1.0), "y": space.uniform(0.0, 1.0)}
        tpe = [
            {"seed": seed, **compared(client, tpe_space, trials=TPE_TRIALS, sampler="tpe", seed=seed)}
            for seed in TPE_SEEDS
        ]
        summary = {
            "hv_ratio_median": median([r["hv_ratio"] for r in tpe]),
            "step_share_median": median([r["step_share"] for r in tpe]),
            "hv_ratio_min": min(r["hv_ratio"] for r in tpe),
        }
        result.update(
            grid=grid,
            tpe={"runs": tpe, **summary},
            target=(
                f"hypervolume >= {TARGET_HV:.0%} of the no-pruner run's with <= {TARGET_STEPS:.0%} of its steps "
                "(grid; TPE at the median)"
            ),
            met={
                "grid": grid["hv_ratio"] >= TARGET_HV and grid["step_share"] <= TARGET_STEPS,
                "tpe": summary["hv_ratio_median"] >= TARGET_HV
                and summary["step_share_median"] <= TARGET_STEPS,
            },
        )
    return result


if __name__ == "__main__":
    _runner.main("pareto", main, quick={"GRID_X": [0.1, 0.5, 0.9], "TPE_TRIALS": 8, "TPE_SEEDS": (0,)})
