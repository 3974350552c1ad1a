"""Experiment: what the user holds — an experiment's results as DataFrames, its best trial, its plots.

It reads an ``ExperimentRecord`` (the trial loop writes to that) and never writes to it, so the same class
serves a live run and one read back from the store (``load()``) alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError, NoResultError
from ..protocol import ExperimentKind, ExperimentState, TrialState
from ..store import ExperimentRecord, InMemoryRecord, TrialRecord
from ._frames import (
    best_first,
    history_frame,
    pareto_frame,
    restarts_frame,
    table_frame,
    trials_frame,
    utilization_frame,
)
from ._status import compute_used, format_params, repr_html, status_line

if TYPE_CHECKING:
    import optuna

__all__ = ["Best", "Experiment", "best_first"]


@dataclass(frozen=True)
class Best:
    """The best completed trial: its ``trial_id``, its ``value`` of the objective and its ``params``."""

    trial_id: int
    value: float
    params: dict[str, Any]


class Experiment:
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
        # (completed trials, Pareto front size) when _highlight last worked the front out (several objectives).
        self._front_size: tuple[int, int] | None = None

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
        objective = self.record.definition.objective
        if objective.several:
            raise ArgumentError(
                f"experiment {self.name!r} optimises {len(objective.metrics)} objectives "
                f"({', '.join(map(str, objective.metrics))}): no one trial is best. exp.pareto has the trials no other beats "
                "in every objective (the Pareto front)"
            )
        rec = self.record.best()
        if rec is None or rec.value is None:  # (the best trial is one with a value)
            raise NoResultError(f"experiment {self.name!r} has no completed trial yet (state: {self.state})")
        return Best(trial_id=rec.trial_id, value=rec.value, params=dict(rec.params))

    @property
    def pareto(self):
        """The Pareto front of a search with several objectives: the completed trials (meeting ``constraints=``,
        if given) that no other beats in every objective, a DataFrame of trial_id, values_<metric> per objective,
        params_<name>..., the first objective's best first."""
        objective = self.record.definition.objective
        if not objective.several:
            raise ArgumentError(
                f"experiment {self.name!r} optimises one objective ({objective.metric!r}): exp.best is its best "
                "trial (exp.pareto is for metric=[...] with several)"
            )
        return pareto_frame(self.trial_records(), objective)

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

    def _reproduction(self, rec: TrialRecord) -> dict[str, Any]:
        """How ``rec`` runs again alone (run_again's ``until_step``), or an ArgumentError saying why it cannot."""
        ranks = self.record.definition.details.get("workers_per_trial") or 1
        if ranks > 1:
            raise ArgumentError(
                f"trial {rec.trial_id} of {self.name!r} is a data-parallel job of {ranks} ranks; reproduce runs a "
                "single-process trial: run it with data_parallel(fn, workers=...) and its parameters"
            )
        return {}

    def _trial_function(self, fn: Callable) -> Callable:
        """What runs the user's ``fn`` as this kind's trials ran (an ablation study's removes modules)."""
        return fn

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

    def _extendable(self, rec: TrialRecord) -> None:
        """An ArgumentError saying why ``rec`` cannot be trained on alone, if it cannot."""
        ranks = self.record.definition.details.get("workers_per_trial") or 1
        if ranks > 1:
            raise ArgumentError(
                f"trial {rec.trial_id} of {self.name!r} is a data-parallel job of {ranks} ranks; extend trains a "
                "single-process trial on"
            )

    def checkpoint(self, trial_id: int | None = None) -> str | None:
        """The folder of a trial's newest checkpoint (``jupyter_dist.checkpoint()``), by default the best
        trial's (a data-parallel run's one trial's); None if it saved none. Load it anywhere with
        ``jupyter_dist.restore({"model": model}, path=exp.checkpoint())``."""
        if trial_id is None:
            best, records = self.record.best(), self.trial_records()
            if best is None and len(records) != 1:
                raise NoResultError(f"experiment {self.name!r} has no completed trial yet: give a trial_id")
            trial_id = best.trial_id if best is not None else records[0].trial_id
        try:
            return self.record.trial(trial_id).checkpoint
        except KeyError:
            raise ArgumentError(f"experiment {self.name!r} has no trial {trial_id!r}") from None

    @property
    def trials(self):
        """One row per trial, a DataFrame of trial_id, [labels...], state, value, [with several objectives: a
        column per objective, by its metric's name], params_<name>..., duration, steps, attempts, seed,
        error_kind (why a failed trial failed, e.g. ``"memory"``: ``exp.trials.query("error_kind == 'memory'")``
        lists those that ran out of memory), error."""
        objective = self.record.definition.objective
        if not isinstance(self.record, InMemoryRecord):  # another record has only its records
            return trials_frame(self.trial_records(), objective)
        running, ended = self.record.trials_table()  # the ended trials as columns: no record each
        return table_frame(running, ended, objective)

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
        try:
            return self.record.trial(trial_id).logs
        except KeyError:
            raise ArgumentError(f"experiment {self.name!r} has no trial {trial_id!r}") from None

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
        from ._plots import experiment_figure

        self.record.load_details()  # the learning curves of a stored experiment
        if self.record.definition.objective.several:
            from ._pareto import pareto_figure

            return pareto_figure(self.record.definition, self.trial_records(), self.status_line())
        importances = None
        if self.kind == ExperimentKind.HPO:
            from ..search import param_importances

            importances = param_importances(self.record)
        return experiment_figure(
            self.record.definition, self.trial_records(), self.status_line(), importances=importances
        )

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

    def _add_report_listener(self, listener: Callable[[int, list], None]) -> None:
        """Call ``listener(trial_id, rows)`` as reports arrive, ``rows`` a list of ``[step, metrics, sent_at]``;
        on the Dask IO thread, so it must be quick and must not draw."""
        self.record.add_report_listener(listener)

    # --- how it reads -----------------------------------------------------------------------------------------
    def summary(self):
        """The experiment's results as one table (a pandas DataFrame), whatever its kind: here its trials best
        first (completed ones by value, then running ones, then the rest), as ``trials`` without the
        tracebacks (``error_kind`` says why each failed one failed); an ablation study's is one row per component.
        The one-line status is ``status_line()``: it says how many trials ran out of memory, and at which
        parameters."""
        table = self.trials.drop(columns=["error"])
        order = [r.trial_id for r in best_first(self.trial_records(), self.record.definition.objective)]
        if not len(table):
            return table
        return table.set_index("trial_id").loc[order].reset_index()

    def _curve_style(self, rec: TrialRecord) -> dict:
        """How a view draws the trial's learning curve (plotly line settings): pruned and failed ones dimmed."""
        from ._plots import curve_style

        return curve_style(rec)

    def _live_figure_title(self) -> str | None:
        """The title of the tab in which the widget view draws ``plot()`` live, for the runs whose figure says
        what their curves do not (several objectives: the front and the hypervolume); None: no such tab."""
        return "Pareto front" if self.record.definition.objective.several else None

    def _curves_kept(self, records: list[TrialRecord], limit: int) -> list[TrialRecord]:
        """The trials whose learning curves a saved view keeps, about ``limit`` of them: the best first."""
        return best_first(records, self.record.definition.objective)[:limit]

    def _resume_is_news(self, rec: TrialRecord) -> bool:
        """Whether a view should say that ``rec``'s attempt resumed from a checkpoint: it went on after a lost
        worker, a failure or a resumed run (a PBT segment's planned start from its member's checkpoint is not)."""
        return True

    def _final_outputs(self) -> list:
        """What a view shows below itself when the experiment ends (an ablation study: its table and chart)."""
        return []

    def _highlight(self) -> str | None:
        """The headline result so far: the best trial (an ablation study: its baseline; several objectives: the
        Pareto front)."""
        if self.record.definition.objective.several:
            # The front changes only when a trial completes: worked out again then, not at every status line.
            completed = self.record.counts()[TrialState.COMPLETED.value]
            if self._front_size is None or self._front_size[0] != completed:
                from ._pareto import front

                found = front(self.trial_records(), self.record.definition.objective)
                self._front_size = (completed, len(found))
            size = self._front_size[1]
            return f"Pareto front: {size} trials" if size else None
        best = self.record.best()
        if best is None:
            return None
        # 4 significant digits, as every table and the JupyterLab extension write numbers
        return f"best {self.metric}={best.value:.4g} (trial {best.trial_id}, {format_params(best.params)})"

    def status_line(self) -> str:
        """The one-line status every view shows: kind, name, state, trials done, the headline result, time."""
        return status_line(self)

    def __repr__(self) -> str:
        return f"<Experiment {self.status_line()}>"

    def _repr_html_(self) -> str:
        return repr_html(self)
