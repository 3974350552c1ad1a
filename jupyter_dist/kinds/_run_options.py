"""``RunOptions``: how and where an experiment runs, whatever its kind, each option defined once (``_spec``): its
help as the entry points' docstrings show it, its ``%%distribute`` flag, and the kinds that take it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._validate import check_positive
from ..errors import ArgumentError
from ..protocol import SCOPES, check_scope
from ..widgets import check_progress
from ._checks import check_gpu_type, check_runtime, parse_resources
from ._spec import option

__all__ = ["RunOptions"]

# The kinds whose trials are single processes (or their ranks): what cpus_per_trial=, max_failures= and the like
# are for. A data-parallel run is one trial.
SEARCHES = ("hpo", "pbt", "ablation")


@dataclass(frozen=True)
class RunOptions:
    """How and where an experiment runs, whatever its kind: the options hpo(), pbt(), ablation() and
    data_parallel() share."""

    cluster: Any = option(
        None,
        help="None (``%distribute_cluster``'s choice, ``JUPYTER_DIST_CLUSTER``, dask config "
        '``jupyter_dist.cluster``, else the embedded LocalCluster), "local", "gateway" (a Dask Gateway cluster of '
        'the user\'s own), "slurm" (Slurm worker jobs of the user\'s own), a scheduler address ("tcp://host:8786", '
        '"tls://..."), a ``distributed.Client``, or a Dask cluster object.',
        short="'local', 'gateway', 'slurm' or a scheduler address, e.g. tcp://host:8786",
    )
    # Trials at once; None: what the cluster can run, followed as it changes. A data-parallel run is one trial.
    parallel: int | None = option(
        None,
        help="Trials in flight at once; default: the cluster's worker threads.",
        short="trials at once (default: the cluster's threads)",
        magic={"type": int},
        kinds=SEARCHES,
    )
    progress: Any = option(
        "auto",
        help='"auto" (in JupyterLab with jupyter_dist\'s extension the view it draws, in another notebook a live '
        'widget, text elsewhere), "lab", "widget", "text", False, or a callable ``view(experiment)`` returning an '
        "object with ``start()``, ``idle()`` and ``finish()``.",
    )
    store: Any = option(
        None,
        help="Where the experiment is recorded as it runs: None, the default store (``JUPYTER_DIST_STORE``, dask "
        "config ``jupyter_dist.store``, or Jupyter's data directory); a file path; False, nowhere (memory only).",
        by_kind={
            "ddp": {
                "help": "Where the run is recorded, as for ``hpo()``; rank 0's and every rank's return values are "
                "stored when they pickle (up to 64 MiB)."
            }
        },
        short="the experiment store file (default: JUPYTER_DIST_STORE or Jupyter's)",
        also=(
            (
                ("--no-store",),
                {"action": "store_false", "help": "record this run in memory only, not in the store"},
            ),
        ),
    )
    resume: bool = option(
        False,
        help="Continue the stored experiment ``name`` (after a kernel restart, a crash, a stop, or to run more "
        "trials): its finished trials are kept and told to the sampler and the pruner, the trials it left "
        "unfinished run again, and it stops when ``trials`` trials in all have finished.",
        by_kind={
            "pbt": {
                "help": "Go on with the stored population ``name``: each member from its newest checkpoint, with "
                "its newest hyperparameters."
            },
            "ablation": {
                "help": "Continue the stored study ``name``: its finished variants are kept, the others run."
            },
            "ddp": {
                "help": "Run the stored data-parallel run ``name`` again (it failed, was stopped or interrupted) as "
                "its next attempt: with ``jupyter_dist.restore()`` in ``fn`` it goes on from its last checkpoint."
            },
        },
        short="continue the stored experiment --name (after a restart, a crash, a stop or a failure)",
        magic={"action": "store_true"},
    )
    # None: the training function's name (the first free name-2, name-3... in a store)
    name: str | None = option(
        None,
        help="A name for the experiment (default: the function's name).",
        short="experiment name (default: the function's name)",
    )
    timeout: float | None = option(
        None,
        help="Seconds for the whole experiment: then no trial starts and the running ones are stopped.",
        by_kind={
            "ddp": {
                "help": "Seconds for the whole run, then it is stopped (its next report() raises TrialPruned on "
                "every rank)."
            }
        },
        short="seconds for the whole experiment",
        magic={"type": float},
    )
    # GPUs each task of a trial holds: a single-task trial's (gpus_per_trial=), each rank's (gpus_per_worker=).
    # Its own kind checks it, as the argument its user named.
    gpus: float | None = option(
        None,
        help="GPUs each trial holds while it runs (``jupyter_dist.devices()``), on workers that declare the Dask "
        "resource ``GPU`` (``dask worker --resources GPU=2``; the embedded cluster declares a GPU machine's own): "
        "a whole number, or a share of one GPU in (0, 1), so that several trials are packed onto one device up "
        "to the shares' sum (``0.25``: four at a time), each capped at its share of the device's memory. "
        "``parallel`` defaults to how many trials the workers' GPUs allow.",
        names={"*": "gpus_per_trial", "ddp": "gpus_per_worker"},
        defaults={"ddp": 0},
        short="hpo, pbt, ablation: GPUs each trial holds (a share such as 0.25 packs trials onto one GPU)",
        magic={"type": float},
        by_kind={
            "ddp": {
                "help": "GPUs per rank: ranks go to workers with at least this much of the Dask resource ``GPU``.",
                "short": "ddp: GPUs per rank (default 0: CPU)",
            }
        },
    )
    gpu_type: str | list[str] | None = option(
        None,
        help='Trials run only on workers whose GPUs are of this type (``"H100"``) or of one of these '
        '(``["H100", "A100"]``: each trial given one in turn, in proportion to how many the cluster has). '
        "Workers declare their type as a Dask resource beside their GPUs (``dask worker --resources "
        "GPU=2,GPU-H100=2``); the embedded cluster declares its own, from the device's name. Refused before "
        "any work starts, naming the types the cluster has, when it has none of these. Without "
        "``gpus_per_trial`` each trial holds one GPU.",
        short="hpo, pbt, ablation: only on workers with GPUs of this type (or of one of a comma-separated list)",
        parse=lambda text: [t.strip() for t in text.split(",") if t.strip()] if text is not None else None,
        kinds=SEARCHES,
    )
    checkpoint_dir: Any = option(
        None,
        help="Where the trials' ``jupyter_dist.checkpoint()`` calls save (default: ``checkpoints`` beside the "
        "store; a shared path or an fsspec URL on several hosts), and how many each trial keeps (the newest).",
        short="where jupyter_dist.checkpoint() saves (a path or fsspec URL; default: beside the store)",
    )
    keep_checkpoints: int = option(
        2,
        help="",
        by_kind={
            "pbt": {
                "help": "Checkpoints each member keeps (the newest); a member that copies another removes its own "
                "branch's."
            }
        },
        short="checkpoints each trial keeps (default 2)",
        magic={"type": int},
        with_option="checkpoint_dir",
    )
    # --- the trial loop's control (jupyter_dist/_control.py): None: none, or, with resume, what the stored run
    # had (the callbacks and a stop function excepted: they are not stored, only named).
    callbacks: Any = option(
        None,
        help="``jupyter_dist.Callback`` instances whose hooks (``on_experiment_start``, ``on_trial_start``, "
        "``on_trial_report``, ``on_trial_end``, ``on_experiment_end``) run in the kernel as the run goes, in "
        "order. A hook that raises fails the run (``ExperimentFailed`` naming the callback and the hook); a hook "
        "may call ``exp.stop()``. A plain function is an Optuna callback, ``f(study, frozen_trial)`` (what "
        "``Study.optimize(callbacks=...)`` takes, e.g. optuna-integration's ``MLflowCallback``), called as each "
        "trial ends with the search's study and the trial as Optuna was told it.",
        by_kind={
            "ddp": {
                "help": "As for ``hpo()``: the run is one trial, and rank 0's reports are what the callbacks hear "
                "and the stop rule judges (``metric`` with no mode: every threshold is reached at ``>=``)."
            }
        },
        short="a list of jupyter_dist.Callback instances in the notebook, by its name (hpo, pbt, ablation, ddp)",
        variable=True,
    )
    stop: Any = option(
        None,
        help="A trial's goal, checked in the kernel on each of its reports: ``{metric: threshold}`` (any one "
        "metric reaching its threshold) or a function ``(trial_id, metrics) -> bool``. A trial meeting it is told "
        "to stop (its next ``report()`` raises ``TrialPruned``) and ends ``completed``, valued as a completed "
        "trial is. A threshold is reached at ``metric >= threshold`` (as Ray Tune compares), except ``metric``'s "
        'own with ``mode="min"``, reached at ``<=``.',
        by_kind={"ddp": {"help": ""}},
        short="a trial's stop rule in the notebook, by its name: {metric: threshold} or f(trial_id, metrics) "
        "(hpo, ddp)",
        variable=True,
        kinds=("hpo", "ddp"),
        with_option="callbacks",
    )
    target: float | None = option(
        None,
        help="The objective's value that ends the experiment: once a completed trial's value reaches it (``>=`` "
        'with mode "max", ``<=`` with "min"), no trial starts, the running ones are stopped (``stopped``), and '
        "the experiment ends ``completed``, its ``exp.message`` naming the trial that reached it.",
        short="hpo: end the experiment once a trial's objective reaches this",
        magic={"type": float},
        kinds=("hpo", "pbt"),
    )
    objective_scope: str | None = option(
        None,
        help='Which of a trial\'s reports of ``metric`` make its value: "last" (the default: the returned value, '
        'else the last report), "max", "min", "avg", "last-5-avg" or "last-10-avg", over the reports of its '
        "current attempt (a returned value counts as its final report). The pruner is given the same: at step n, "
        "the scope over the reports up to n. ``resume=True`` keeps the stored run's scope, target and stop "
        "thresholds unless given (callbacks and a stop function must be given again).",
        by_kind={
            "ablation": {
                "help": "As for ``hpo()``: the scope makes each trial's value, which the summary compares. (No "
                "``stop=`` or ``target=``: variants compare only when each runs to its end.)"
            }
        },
        short="which reports make a trial's value: last (default), max, min, avg, last-5-avg, last-10-avg (hpo, "
        "ablation)",
        magic={"choices": SCOPES},
        kinds=("hpo", "ablation"),
    )
    # hpo(constraints=): a function of a trial's metrics (trials/_goals.py Constraints)
    constraints: Any = option(
        None,
        help="A function of a completed trial's metrics (``{name: value}``: its last reports and what it "
        'returned) giving a number per constraint, each <= 0 when it holds, e.g. ``lambda m: [m["latency_ms"] - '
        '20]`` (set on each trial as Optuna 5\'s ``Trial.set_constraint``): the samplers "tpe", "gp", "nsga2" and '
        '"nsga3" prefer trials that meet them, and ``exp.pareto`` lists only those. A resumed run needs it given '
        "again.",
        short="hpo: a function in the notebook of a trial's metrics, a number per constraint (<= 0: met)",
        variable=True,
        kinds=("hpo",),
    )
    # How trials use the cluster (stored in the definition's details, so a resume runs the same way; None: not
    # given, a resumed run keeps the stored value).
    max_failures: int | None = option(
        None,
        help="A trial whose function raises runs again, on the cluster, as the next attempt of the same trial, up "
        "to this many more times (default 0; Ray Tune's ``FailureConfig(max_failures=)``): ``restore()`` finds "
        "its checkpoints, ``exp.history`` tells its attempts apart, the failed attempt's traceback stays in the "
        "trial's stderr, and only its final outcome is told to the sampler. A setup error, a bad return value, a "
        "missing metric, a pruned or stopped trial never run again. A resumed run keeps its stored value.",
        short="hpo, ablation: runs more of a trial whose function raised (default 0)",
        magic={"type": int},
        kinds=SEARCHES,
    )
    cpus_per_trial: int | None = option(
        None,
        help="Cores each trial uses: torch's intra-op threads in the trial (the worker's own setting is back after "
        "it). On workers that declare a Dask ``CPU`` resource each trial asks for that many ``CPU``; elsewhere a "
        "worker's cores are its threads, and ``parallel`` defaults to the cluster's threads // cpus_per_trial (2 "
        "one-thread workers, cpus_per_trial=2: one trial at a time).",
        short="hpo, ablation: cores (torch threads) per trial",
        magic={"type": int},
        kinds=SEARCHES,
    )
    worker_resources: dict[str, float] | None = option(
        None,
        help='Dask worker resources each trial needs, ``{"MEM": 4e9}`` (``dask worker --resources MEM=16e9``): '
        "trials run only where they fit, and ``parallel`` defaults to how many fit; refused before any work "
        'starts when no worker declares enough. ``"GPU"`` here is ``gpus_per_trial``. A resumed run keeps its '
        "stored value.",
        by_kind={
            "ddp": {
                "help": 'Dask worker resources each rank needs, ``{"MEM": 4e9}``, as for ``hpo()`` (``"GPU"`` here '
                "is ``gpus_per_worker``). A failing rank is not retried (there is no ``max_failures``): re-run the "
                "job with ``resume=True``, and ``restore()`` goes on from its checkpoint."
            }
        },
        names={"*": "resources"},
        short="Dask worker resources each trial (each rank) needs, e.g. MEM=4e9,GPU=1, on workers declaring them",
        parse=parse_resources,
    )

    def __post_init__(self) -> None:
        # resources={"GPU": n} is gpus_per_trial=n (the trial then holds its devices too): one field says it.
        gpus = (
            (self.worker_resources or {}).get("GPU") if isinstance(self.worker_resources, Mapping) else None
        )
        if gpus is not None and not self.gpus and self.worker_resources is not None:
            rest = {k: v for k, v in self.worker_resources.items() if k != "GPU"}
            object.__setattr__(self, "gpus", gpus)
            object.__setattr__(self, "worker_resources", rest or None)
        if self.gpu_type is not None and self.gpus is None:
            object.__setattr__(self, "gpus", 1)  # a type of GPU asked for: one of them
        # A whole number as a float (the magic's 2.0, resources={"GPU": 2.0}) is that many GPUs: gpus_per_trial=2.
        if isinstance(self.gpus, float) and self.gpus.is_integer():
            object.__setattr__(self, "gpus", int(self.gpus))

    def check(self) -> None:
        """Refuse options that cannot work, before any work starts."""
        check_positive("parallel", self.parallel)
        check_progress(self.progress)
        check_positive("timeout", self.timeout, integer=False)
        if self.objective_scope is not None:
            check_scope(self.objective_scope)
        check_runtime(self.max_failures, self.cpus_per_trial, self.worker_resources)
        check_gpu_type(self.gpu_type)
        if self.worker_resources and "GPU" in self.worker_resources:
            raise ArgumentError(
                f"resources={{'GPU': {self.worker_resources['GPU']!r}}} and {self.gpus!r} GPUs per trial (or "
                "per worker): say the GPUs once, in one or the other"
            )

    @property
    def scope(self) -> str:
        """The objective's scope (``Objective.scope``) the kinds build their objective with."""
        return self.objective_scope or "last"

    @property
    def resources(self) -> dict[str, float] | None:
        """The Dask resources each task of a trial needs (None: any worker): ``resources=`` with the GPUs."""
        needed = dict(self.worker_resources or {})
        if self.gpus:
            needed["GPU"] = self.gpus
        return needed or None

    @property
    def gpu_types(self) -> list[str] | None:
        """``gpu_type`` as a list (None: any GPU)."""
        if self.gpu_type is None:
            return None
        return [self.gpu_type] if isinstance(self.gpu_type, str) else list(self.gpu_type)

    def runtime_details(self) -> dict[str, Any]:
        """What the definition's details keep of how trials use the cluster."""
        return {
            "max_failures": self.max_failures or 0,
            "cpus_per_trial": self.cpus_per_trial,
            "resources": dict(self.worker_resources or {}),
            "gpus": self.gpus,
            "gpu_type": self.gpu_types,
        }

    def resumed(self, details: dict[str, Any]) -> RunOptions:
        """These options for continuing a stored run: what was not given now is what it ran with."""
        stored = {
            "max_failures": details.get("max_failures"),
            "cpus_per_trial": details.get("cpus_per_trial"),
            "worker_resources": details.get("resources") or None,
            "gpus": details.get("gpus"),
            "gpu_type": details.get("gpu_type"),
        }
        return dataclasses.replace(
            self, **{k: v for k, v in stored.items() if getattr(self, k) is None and v is not None}
        )

    def experiment_name(self, fn: Callable) -> str:
        return self.name or fn.__name__
