"""The ``%%distribute`` options of the trial loop's control (jupyter_dist/_control.py), for the kinds that take
them: ``--callbacks`` and ``--stop`` name notebook variables (a list of Callbacks; a dict or a function)."""

from __future__ import annotations

from ..protocol import SCOPES
from ._base import option

CALLBACKS = option(
    "--callbacks",
    variable=True,
    help="a list of jupyter_dist.Callback instances in the notebook, by its name (hpo, pbt, ablation, ddp)",
)
STOP = option(
    "--stop",
    variable=True,
    help="a trial's stop rule in the notebook, by its name: {metric: threshold} or f(trial_id, metrics) (hpo, ddp)",
)
TARGET = option("--target", type=float, help="hpo: end the experiment once a trial's objective reaches this")
OBJECTIVE_SCOPE = option(
    "--objective-scope",
    choices=SCOPES,
    help="which reports make a trial's value: last (default), max, min, avg, last-5-avg, last-10-avg (hpo, ablation)",
)
