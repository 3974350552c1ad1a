"""A Hugging Face ``Trainer`` callback that reports its evaluation metrics to jupyter_dist."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._report import report
from ..errors import TrialPruned
from ._metrics import MetricSelection, import_framework

__all__ = ["ReportCallback"]

_transformers = import_framework(
    "transformers", "'jupyter_dist[transformers]'", "jupyter_dist.integrations.transformers"
)

# What transformers' own default_compute_objective leaves out of a search's objective: the epoch counter and
# the speed measurements, which say how fast, not how good.
_NOT_METRICS = ("epoch", "total_flos")
_SPEED_SUFFIXES = ("_runtime", "_per_second", "_compilation_time", "_preparation_time")


def _is_metric(name: str) -> bool:
    return name not in _NOT_METRICS and not name.endswith(_SPEED_SUFFIXES)


def _eval_name(name: str, logged: Mapping[str, Any]) -> str | None:
    # As metric_for_best_model: "accuracy" means "eval_accuracy" (and "eval_accuracy" is accepted as written).
    for candidate in (name, f"eval_{name}"):
        if candidate in logged:
            return candidate
    return None


class ReportCallback(_transformers.TrainerCallback):  # type: ignore[name-defined]  # the framework's class: imported by name
    """Report a Hugging Face ``Trainer``'s evaluation metrics with ``jupyter_dist.report()``; stop training
    when the trial is pruned.

    ``Trainer(..., callbacks=[ReportCallback()])`` inside the training function, with an evaluation strategy
    (``eval_strategy="epoch"`` or ``"steps"``), is all an HPO trial needs. Outside an experiment (the function
    called directly) it reports nowhere and changes nothing.

    Parameters
    ----------
    metrics
        Which evaluation metrics to report. None (default): every number ``evaluate()`` returns, under
        transformers' names (``eval_loss``, ``eval_accuracy``...), leaving out the epoch and the speed
        measurements (``eval_runtime``, ``..._per_second``), as transformers' own search objective does. A name
        or list of names: those, under transformers' names; as with ``metric_for_best_model``, ``"accuracy"``
        picks ``eval_accuracy`` (reported as ``eval_accuracy``). A dict ``{reported_name: logged_name}``: those,
        renamed (``{"accuracy": "eval_accuracy"}``).
    on_log
        Also report the training logs (``loss``, ``learning_rate``, ``grad_norm``) every ``logging_steps``;
        ``metrics=`` picks among them too (there ``"loss"`` is the training loss: write evaluation metrics with
        their ``eval_`` prefix in a dict). Off by default: the evaluation is what a search judges.

    Notes
    -----
    Each report's ``step`` is ``state.global_step`` (the optimizer steps taken), as transformers reports to
    Optuna in ``hyperparameter_search``: ``hpo(max_steps=...)`` counts in optimizer steps.

    When the trial is pruned or the experiment stopped, ``report()`` raises ``jupyter_dist.TrialPruned`` in
    ``on_evaluate``. The callback then asks the Trainer to stop (``control.should_training_stop``; and, unless
    ``save_strategy="best"``, not to checkpoint that evaluation), so it finishes the way it finishes any run
    (``on_train_end`` for every callback, trackers closed), and raises ``TrialPruned`` again from its own
    ``on_train_end``: ``train()`` does not return and the trial is recorded as pruned with its last reported
    values. Add it after the other callbacks (``callbacks=[..., ReportCallback()]``) so theirs run first. An
    ``evaluate()`` outside ``train()`` raises at once.

    Examples
    --------
    >>> def train(lr=5e-5):
    ...     args = TrainingArguments("out", learning_rate=lr, eval_strategy="epoch", report_to="none")
    ...     trainer = Trainer(model, args, train_dataset=train_ds, eval_dataset=eval_ds,
    ...                       callbacks=[ReportCallback()])
    ...     trainer.train()
    >>> exp = jupyter_dist.hpo(train, {"lr": space.loguniform(1e-5, 1e-3)}, metric="eval_loss", mode="min")
    """

    def __init__(self, metrics: str | list[str] | dict[str, str] | None = None, on_log: bool = False) -> None:
        self.metrics = MetricSelection(metrics, "ReportCallback")
        self.on_log_too = bool(on_log)
        self._training = False
        self._pruned: TrialPruned | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training, self._pruned = True, None

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Any = None, **kwargs: Any) -> None:
        self._report(state, control, self.metrics.pick(metrics or {}, _is_metric, _eval_name))

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if self.on_log_too:
            # evaluate() logs its metrics too: those were reported by on_evaluate already.
            training = {name: value for name, value in (logs or {}).items() if not name.startswith("eval_")}
            self._report(state, control, self.metrics.pick(training, _is_metric))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = False
        pruned, self._pruned = self._pruned, None
        if pruned is not None:
            raise pruned

    def _report(self, state: Any, control: Any, values: dict[str, float]) -> None:
        if not values or self._pruned is not None:
            return
        try:
            report(step=state.global_step, **values)
        except TrialPruned as exc:
            if not self._training:
                raise
            self._pruned = exc
            control.should_training_stop = True
            control.should_save = False
