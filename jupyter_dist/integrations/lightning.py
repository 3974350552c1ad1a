"""A PyTorch Lightning callback that reports the Trainer's logged metrics to jupyter_dist (``import lightning``).

For the older ``import pytorch_lightning`` package use ``jupyter_dist.integrations.pytorch_lightning``.
"""

from __future__ import annotations

from ._lightning_hooks import LightningReporting
from ._lightning_ranks import DataParallelRanks
from ._metrics import import_framework

__all__ = ["DataParallelEnvironment", "ReportCallback"]

_pl = import_framework(
    "lightning.pytorch", "'jupyter_dist[lightning]'", "jupyter_dist.integrations.lightning"
)


class ReportCallback(LightningReporting, _pl.Callback):  # type: ignore[name-defined]  # the framework's class: imported by name
    """Report the Trainer's logged metrics with ``jupyter_dist.report()``; stop training when the trial is pruned.

    ``trainer = lightning.Trainer(callbacks=[ReportCallback()])`` inside the training function is all an HPO
    trial needs: each report feeds the live view, the store and the pruner. Outside an experiment (the function
    called directly) it reports nowhere and changes nothing.

    Parameters
    ----------
    metrics
        Which of ``trainer.callback_metrics`` (what ``self.log`` logged) to report. None (default): every one
        that is a number. A name or list of names: those. A dict ``{reported_name: logged_name}``: those, under
        new names (``{"loss": "val_loss"}``). A name not logged at a given hook is left out of that report.
    on
        ``"validation_end"`` (default, as Optuna's pruning callback): after each validation run of ``fit()``,
        not the sanity check nor a stand-alone ``trainer.validate()``. Lightning validates before it ends the
        training epoch, so training metrics logged per epoch are then still the previous epoch's.
        ``"train_epoch_end"``: at the end of each training epoch, with that epoch's training metrics and its
        validation metrics.
    step
        The report's ``step``: ``"epoch"`` (default, ``trainer.current_epoch``, counted from 0) or
        ``"global_step"`` (``trainer.global_step``, the optimizer steps taken), for several validations per
        epoch (``val_check_interval``). ``hpo(max_steps=...)`` counts in the same unit.

    Notes
    -----
    When the trial is pruned or the experiment stopped, ``report()`` raises ``jupyter_dist.TrialPruned`` in the
    hook. Lightning ends the run as for any exception (``on_exception`` hooks, teardown, loggers finalized) and
    lets it through ``trainer.fit()``; the trial is then recorded as pruned with its last reported values. In a
    run of several processes (a DDP strategy, or ``data_parallel()``) every rank decides at the same hook, so
    none is left waiting in a collective.

    Examples
    --------
    >>> def train(lr=1e-3):
    ...     model = LitModel(lr)
    ...     trainer = lightning.Trainer(max_epochs=20, callbacks=[ReportCallback(["val_loss"])])
    ...     trainer.fit(model, train_loader, val_loader)
    >>> exp = jupyter_dist.hpo(train, {"lr": space.loguniform(1e-4, 1e-1)}, metric="val_loss", mode="min")
    """


class DataParallelEnvironment(DataParallelRanks, _pl.plugins.ClusterEnvironment):  # type: ignore[name-defined]  # the framework's class: imported by name
    """The cluster environment of a Lightning Trainer inside ``jupyter_dist.data_parallel()``.

    Each rank of the job is a Dask worker process that jupyter_dist has already joined into a process group
    (Lightning uses it as it is): this tells Lightning the job's ranks and that it launches no process.
    Lightning's own default would take every rank for rank 0.

    Examples
    --------
    >>> def train(lr=0.1):
    ...     trainer = lightning.Trainer(
    ...         strategy="ddp", accelerator="cpu", devices=1, num_nodes=jupyter_dist.world_size(),
    ...         plugins=[DataParallelEnvironment()], callbacks=[ReportCallback("val_loss")], max_epochs=10)
    ...     trainer.fit(LitModel(lr), train_loader, val_loader)  # Lightning shards the loaders itself
    >>> exp = jupyter_dist.data_parallel(train, workers=2)

    A Trainer sized other than ``devices=1, num_nodes=jupyter_dist.world_size()`` is refused when it is set up.
    """
