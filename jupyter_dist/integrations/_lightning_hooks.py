"""The Lightning report callback's behaviour, shared by ``lightning.pytorch`` and ``pytorch_lightning`` (two
packages whose Trainers each accept only their own ``Callback`` class): ``lightning.py`` and
``pytorch_lightning.py`` each mix this into their framework's ``Callback``."""

from __future__ import annotations

from typing import Any

from .._report import report
from ..errors import ArgumentError, TrialPruned
from ._metrics import MetricSelection

__all__ = ["LightningReporting"]

HOOKS = ("validation_end", "train_epoch_end")
STEPS = ("epoch", "global_step")


class LightningReporting:
    """Reports ``trainer.callback_metrics`` through ``jupyter_dist.report()`` and stops the Trainer when the
    trial is pruned (see ``jupyter_dist.integrations.lightning.ReportCallback``)."""

    def __init__(
        self,
        metrics: str | list[str] | dict[str, str] | None = None,
        on: str = "validation_end",
        step: str = "epoch",
    ) -> None:
        super().__init__()
        if on not in HOOKS:
            raise ArgumentError(
                f"ReportCallback(on={on!r}) is not a hook it reports on: use one of {', '.join(map(repr, HOOKS))}"
            )
        if step not in STEPS:
            raise ArgumentError(
                f"ReportCallback(step={step!r}) is not known: use 'epoch' (trainer.current_epoch) or "
                "'global_step' (trainer.global_step, the optimizer steps taken)"
            )
        self.metrics = MetricSelection(metrics, "ReportCallback")
        self.on = on
        self.step = step

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self.on == "validation_end":
            self._report(trainer)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self.on == "train_epoch_end":
            self._report(trainer)

    def _report(self, trainer: Any) -> None:
        # The sanity check's two batches and a stand-alone trainer.validate() are not steps of the training run
        # (the latter would report the last epoch's step a second time).
        if trainer.sanity_checking or trainer.state.fn != "fit":  # TrainerFn is a str enum
            return
        step = trainer.current_epoch if self.step == "epoch" else trainer.global_step
        values = self.metrics.pick(trainer.callback_metrics)
        stop: TrialPruned | None = None
        try:
            if values:
                report(step=step, **values)
        except TrialPruned as exc:
            stop = exc
        # Every rank of a multi-process run decides together, at the same hook, as Optuna's callback does: a
        # rank that stopped alone would leave the others waiting in their next collective. One process: the
        # decision is its own.
        if trainer.strategy.reduce_boolean_decision(stop is not None, all=False):
            trainer.should_stop = True
            # Raised from the hook, Lightning ends the run cleanly (on_exception hooks, teardown: its
            # _call_and_handle_interrupt) and lets it through fit(); the runner records the trial as pruned.
            raise stop or TrialPruned(f"stopped at {self.step} {step}: another rank's trial was pruned")
