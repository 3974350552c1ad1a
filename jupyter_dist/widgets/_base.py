"""The one observer base of the live views: they read an Experiment, throttled, and draw it.

The trial loop calls ``idle()`` from the kernel's main thread between waits, so drawing happens there — at most
``max_rate`` times a second however fast reports arrive — and outputs land in the cell that runs the experiment.
"""

from __future__ import annotations

import time

from ..experiment import Experiment

# The default pruner surprises users of Ray Tune (no pruning by default) on short runs: every view's first line says
# it is on and how to turn it off (the lab extension writes the same words: format.ts earlyStoppingNote).
EARLY_STOPPING_NOTE = "ASHA early stopping · pruner=None to turn it off"
# Secondary text in the views' HTML, in JupyterLab's theme colour (light or dark), grey outside it.
MUTED = "color:var(--jp-ui-font-color2,#757575)"


def early_stopping_note(exp: Experiment) -> str | None:
    """What the first line of a live view says of early stopping: EARLY_STOPPING_NOTE while ASHA (the default
    pruner) decides, else nothing."""
    return EARLY_STOPPING_NOTE if exp.record.definition.details.get("pruner") == repr("asha") else None


def importances_table(exp: Experiment):
    """An HPO run's parameter importances as a table (most important first) for the views that end with tables
    (the widget and the text view; the JupyterLab extension draws them itself), or None: another kind, or too few
    completed trials."""
    from ..protocol import ExperimentKind

    if exp.kind != ExperimentKind.HPO:
        return None
    import pandas as pd

    from ..search import IMPORTANCE_EVALUATOR, param_importances

    importances = param_importances(exp.record)
    if importances is None:
        return None
    return pd.DataFrame(
        {"parameter": list(importances), f"importance ({IMPORTANCE_EVALUATOR})": list(importances.values())}
    )


class ExperimentView:
    max_rate = 5.0  # redraws per second

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        self._last_draw = 0.0

    def start(self) -> None:
        self.draw()

    def idle(self) -> None:
        now = time.monotonic()
        if now - self._last_draw >= 1.0 / self.max_rate:
            self._last_draw = now
            self.draw()

    def finish(self) -> None:
        self.draw()

    def draw(self) -> None:
        raise NotImplementedError


def format_duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"
