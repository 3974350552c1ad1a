"""Experiment: what the user holds — an experiment's results as DataFrames, its best trial, its plots.

It reads an ``ExperimentRecord`` (the trial loop writes to that) and never writes to it, so the same class
serves a live run and one read back from the store (``load()``) alike. The class lists what an experiment
offers; the longer bodies are _results' functions, and the private methods a kind overrides are its base,
``ExperimentHooks`` (_hooks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import ExperimentState
from ..store import ExperimentRecord, TrialRecord
from ._frames import best_first, history_frame, restarts_frame, utilization_frame
from ._hooks import ExperimentHooks
from ._results import Best, best_of, checkpoint_of, figure_of, logs_of, pareto_of, summary_of, trials_of
from ._status import compute_used, repr_html, status_line

if TYPE_CHECKING:
    import optuna

__all__ = ["Best", "Experiment", "best_first"]


class Experiment(ExperimentHooks):
    """An experiment's results: what ``hpo()``, ``pbt()``, ``ablation()``, ``data_parallel()`` and ``load()``
    return.

    Its trials and every reported metric as pandas DataFrames (``trials``, ``history``, ``summary()``), its best
    trial (``best``), its plots (``plot()``), its trials' output (``logs()``) and checkpoints
    (``checkpoint()``), and for HPO a real ``optuna.Study`` (``study``). It reads the run's record (``record``)
    and never writes to it: a live run and one read back from the store read the same; ``stop()`` ends a live
    run gracefully. Once it has ended, ``extend()`` trains a trial on and ``reproduce()`` runs one again.
    """

    def __init__(self, record: ExperimentRecord, stop: Callable[[], None] | None = None) -> None:
        self.record = record
        self._request_stop = stop
        # For exp.reproduce: the run's trial function (a run in this kernel), and what was recorded about it
        # (its name, source hash, the versions; the store's, or the live run's). None: not known.
        self._function: Callable | None = None
        self._about: dict[str, Any] | None = None
        # The store file it is recorded in (None: memory only), where exp.extend records the trial trained on.
        self._store: str | None = None

    # --- what it is -------------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The experiment's id in the store (``load()`` takes it, as it takes the name)."""
        return self.record.definition.id

    @property
    def name(self) -> str:
        """The experiment's name (``name=``, by default the training function's)."""
        return self.record.definition.name

    @property
    def kind(self) -> str:
        """What it runs: ``"hpo"``, ``"pbt"``, ``"ablation"`` or ``"ddp"``."""
        return self.record.definition.kind

    @property
    def metric(self) -> str | None:
        """The objective's metric (``metric=``); None when there is none (a data-parallel run)."""
        return self.record.definition.objective.metric

    @property
    def mode(self) -> str:
        """Which way the objective is better, ``"max"`` or ``"min"``."""
        return self.record.definition.objective.direction.value

    @property
    def space(self) -> dict[str, Any]:
        """The search space, as the store keeps it."""
        return self.record.definition.space

    @property
    def total(self) -> int | None:
        """How many trials the experiment runs in all; None when not known ahead (a time limit)."""
        return self.record.definition.total

    @property
    def max_steps(self) -> int | None:
        """The most steps a trial reports (``max_steps=``), or None."""
        return self.record.definition.max_steps

    @property
    def timeout(self) -> float | None:
        """The seconds given for the whole experiment (``timeout=``), or None."""
        return self.record.definition.timeout

    @property
    def seed(self) -> int | None:
        """The experiment's seed: ``seed=`` as given, or drawn when none was. With each trial's id it seeds what the
        trial draws (``exp.trials``'s ``seed`` column); running again with ``seed=exp.seed`` draws the same. None:
        a run recorded before seeds were."""
        return self.record.definition.details.get("seed")

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard of the cluster it ran on, when there was one."""
        return self.record.definition.dashboard_link

    @property
    def _curve_metric(self) -> str | None:
        """The metric drawn as learning curves (the objective's, or the first one reported)."""
        return self.record.curve_metric

    @property
    def state(self) -> ExperimentState:
        """Running, completed, stopped, failed or interrupted (an ``ExperimentState``)."""
        return self.record.state

    @property
    def error(self) -> str | None:
        """Why the run failed (or was interrupted); None for one that ended as planned."""
        return self.record.error

    @property
    def message(self) -> str | None:
        """What the run's end says (its error, or how a planned end came, ``target=`` reached by which trial)."""
        return self.record.message

    @property
    def started(self) -> float:
        """When it started (seconds since the epoch, as ``time.time()``)."""
        return self.record.started

    @property
    def ended(self) -> float | None:
        """When it ended (seconds since the epoch), or None while it runs."""
        return self.record.ended

    @property
    def elapsed(self) -> float:
        """How long the experiment has run, as every view and ``experiments()`` say it (a resumed run's earlier
        runs included)."""
        return self.record.duration()

    # --- results ----------------------------------------------------------------------------------------------
    @property
    def best(self) -> Best:
        """The best completed trial so far (several objectives: refused, see ``pareto``)."""
        return best_of(self)

    @property
    def pareto(self):
        """The Pareto front of a search with several objectives: the completed trials (meeting ``constraints=``,
        if given) that no other beats in every objective, a DataFrame of trial_id, values_<metric> per objective,
        params_<name>..., the first objective's best first."""
        return pareto_of(self)

    def reproduce(self, trial_id: int, on: str = "kernel", *, fn: Callable | None = None) -> Any:
        """Run trial ``trial_id`` again as its run ran it, and return what the function returned: its
        parameters, its seed (``random``, NumPy and torch start where they did), stopped at the report its run
        stopped it at (None returned); a failed trial raises its error again. ``on="kernel"`` (the default) runs it here, where
        ``%debug`` and breakpoints work; ``on="cluster"`` as one task on the current cluster. It starts from its
        beginning and leaves the experiment and its checkpoints as they are (its reports are not recorded).

        The function is the run's, or for a ``load()``ed experiment the one of its name defined in the notebook
        again (or ``fn=``). A warning names what changed since the run: the function's source, or the versions
        of Python, torch, Dask, Optuna and jupyter_dist."""
        from ._reproduce import reproduce

        return reproduce(self, trial_id, on, fn)

    def extend(
        self,
        trial_id: int,
        max_steps: int,
        *,
        fn: Callable | None = None,
        cluster: Any = None,
        progress: Any = "auto",
        **params: Any,
    ) -> Experiment:
        """Train finished (or pruned) trial ``trial_id`` on from its newest checkpoint to ``max_steps`` steps, as
        that trial's next attempt, and return this experiment: no step is done again, its curve goes on in every
        view, its value and state become the attempt's, its label ``extended`` says to how many steps. It ends,
        completed, at its checkpoint of step ``max_steps - 1``.

        ``**params``: arguments of the function that change, most often what bounds its loop
        (``exp.extend(3, max_steps=40, epochs=40)``); a warning says so when the function's own budget ended it
        early. The function must save checkpoints (``jupyter_dist.checkpoint``) and load them
        (``jupyter_dist.restore``); one that saved none is refused. ``fn``: the function, for a ``load()``ed
        experiment whose function the notebook does not define again under its name. ``cluster`` and
        ``progress``: as for ``hpo()``. It runs once the experiment has ended, recorded where the experiment is."""
        from ._extend import extend

        return extend(self, trial_id, max_steps, fn, cluster, progress, params)

    def checkpoint(self, trial_id: int | None = None) -> str | None:
        """The folder of a trial's newest checkpoint (``jupyter_dist.checkpoint()``), by default the best
        trial's (a data-parallel run's one trial's); None if it saved none. Load it anywhere with
        ``jupyter_dist.restore({"model": model}, path=exp.checkpoint())``."""
        return checkpoint_of(self, trial_id)

    @property
    def trials(self):
        """One row per trial, a DataFrame of trial_id, [labels...], state, value, [with several objectives: a
        column per objective, by its metric's name], params_<name>..., duration, steps, attempts, seed,
        error_kind (why a failed trial failed, e.g. ``"memory"``: ``exp.trials.query("error_kind == 'memory'")``
        lists those that ran out of memory), error."""
        return trials_of(self)

    @property
    def history(self):
        """One row per reported metric, a DataFrame of trial_id, attempt, step, metric, value, time (when it was
        reported)."""
        return history_frame(self.record.report_columns())

    @property
    def utilization(self):
        """What each trial used, sampled about once a second on its worker: a DataFrame of trial_id, time,
        cpu_percent (of one core), rss_mb (its worker process's resident memory), gpu_util and gpu_mem_mb (NaN
        without a GPU that NVML reads). docs/how-to/utilization.md says what each counts."""
        return utilization_frame(self.record.utilization().columns())

    @property
    def restarts(self):
        """Each time an elastic data-parallel job started again at another size (``min_workers=``/
        ``max_workers=``), a DataFrame of trial_id, at (when), why, lost (the ranks lost), world_before,
        world_after, lost_at (its newest step then), from_step (the checkpoint it went on from), steps_redone and
        message (as the views say it)."""
        return restarts_frame(self.trial_records())

    @property
    def reports(self) -> int:
        """How many report() calls have arrived so far."""
        return self.record.report_count()

    def logs(self, trial_id: int) -> str:
        """What a trial printed (stdout, stderr) and its traceback if it failed."""
        return logs_of(self, trial_id)

    def to_mlflow(self, tracking_uri: str | None = None, experiment: str | None = None) -> str:
        """Send the experiment to MLflow now, as ``jupyter_dist.integrations.MLflow`` does while a run goes: a
        parent run, a nested run per trial with its params, metrics at their steps, state, times, output and the
        best trial's tag. ``tracking_uri``: None, MLflow's default (``MLFLOW_TRACKING_URI``); ``experiment``:
        None, one named as this experiment. Each call makes new runs. Returns the parent run's id; needs
        ``pip install 'jupyter_dist[mlflow]'``."""
        from ..tracking.mlflow import to_mlflow

        return to_mlflow(self, tracking_uri, experiment)

    def to_tensorboard(self, log_dir: str = "runs") -> str:
        """Write the experiment as TensorBoard event files now, as ``jupyter_dist.integrations.TensorBoard`` does
        while a run goes: ``log_dir/<name>/trial-<id>``, each trial's scalars, output and hparams. Returns the
        experiment's folder; needs ``pip install 'jupyter_dist[tensorboard]'``."""
        from ..tracking.tensorboard import to_tensorboard

        return to_tensorboard(self, log_dir)

    def trial_records(self) -> list[TrialRecord]:
        """The record's trials, as the ``Callback`` hooks see them (``trials`` is their table)."""
        return self.record.trial_records()

    def counts(self) -> dict[str, int]:
        """Trials by state: running, completed, pruned, failed, stopped, interrupted; and ``queued``: trials sent
        to a worker that wait there behind another one (their state is running; they are not counted so)."""
        return self.record.counts()

    @property
    def done(self) -> int:
        """Trials done, as counted against the total (not running, not interrupted)."""
        return self.record.done()

    def compute(self) -> dict[str, float]:
        """Compute used so far: reported steps and trial-seconds, all trials; and, with ``max_steps``, the
        share of steps saved against running every finished trial to ``max_steps``."""
        return compute_used(self.record)

    def plot(self):
        """A plotly figure: learning curves, objective over trials, parallel coordinates of the parameters, and
        (HPO, with enough completed trials) the parameters' importances."""
        return figure_of(self)

    @property
    def study(self) -> optuna.Study:
        """The experiment as a real ``optuna.Study`` (in memory, built anew from its record at each call),
        holding every finished trial with its params and distributions, value, state, the objective's
        intermediate values and user_attrs ``trial_id``, ``attempts``, ``duration``. For
        ``optuna.visualization.*``, ``optuna.importance.get_param_importances(exp.study)``, or
        optuna-dashboard after ``optuna.create_study(study_name=exp.name, storage="sqlite:///optuna.db",
        direction=exp.study.direction).add_trials(exp.study.trials)``. Only an HPO experiment has one."""
        from ..search import study_of

        return study_of(self.record)

    def stop(self) -> None:
        """Stop gracefully: no new trials, running ones told to stop, finished ones kept. Safe from any thread."""
        if self._request_stop is not None and self.state is ExperimentState.RUNNING:
            self._request_stop()

    # --- how it reads -----------------------------------------------------------------------------------------
    def summary(self):
        """The experiment's results as one table (a pandas DataFrame), whatever its kind: here its trials best
        first (completed ones by value, then running ones, then the rest), as ``trials`` without the
        tracebacks (``error_kind`` says why each failed one failed); an ablation study's is one row per component.
        The one-line status is ``status_line()``: it says how many trials ran out of memory, and at which
        parameters."""
        return summary_of(self)

    def status_line(self) -> str:
        """The one-line status every view shows: kind, name, state, trials done, the headline result, time."""
        return status_line(self)

    def __repr__(self) -> str:
        return f"<Experiment {self.status_line()}>"

    def _repr_html_(self) -> str:
        return repr_html(self)
