"""One trial run again, outside its run (``exp.reproduce``): in the kernel, where ``%debug`` and breakpoints work, or
as one task on a worker.

It runs as its run ran it: the same parameters, the same seed (trials/_seeding.py), and a trial context of its own
with the trial's id (an ablation variant's module removal reads it). Nothing it does reaches the experiment: its
reports are kept here, ``checkpoint()`` saves nothing and ``restore()`` finds nothing, so it starts from its
beginning and its run's checkpoints stay as they were. A trial its run pruned is stopped at the same report.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import TrialPruned
from ._outbox import OUTCOME_WAIT
from ._runner import _wants_reporter
from ._seeding import kept_torch_state, seeded
from ._trial_context import Reporter, SegmentDone, TrialContext, _as_number, activate, forget_experiment

__all__ = ["LocalTrial", "run_again"]


class LocalTrial(TrialContext):
    """A trial context that keeps its reports (``reports``: ``(step, metrics)`` in order) and sends nothing."""

    def __init__(self, exp_id: str, trial_id: int, stop_after: int | None = None) -> None:
        # An outbox of its own (never used: nothing here sends), apart from any live run's in this process.
        super().__init__(f"{exp_id}-again", trial_id, "again", "", _nowhere)
        self.stop_after = stop_after  # the reports its run made before pruning it; None: it was not pruned
        self.reports: list[tuple[int, dict[str, float]]] = []

    def report(self, step: int | None, metrics: dict[str, Any]) -> None:
        values = {name: _as_number(name, value) for name, value in metrics.items()}
        step = self.steps if step is None else int(step)
        self.steps += 1
        self.last.update(values)
        self.reports.append((step, values))
        if self.stop_after is not None and self.steps >= self.stop_after:
            raise TrialPruned(f"trial {self.trial_id} was pruned at this report (step {step}) in its run")

    def flush(self) -> None:
        pass

    def send(self, msg: Mapping[str, Any], wait: float = OUTCOME_WAIT) -> None:
        pass

    def send_log(self, stream: str, text: str) -> None:
        pass  # output is not captured: it shows where the trial runs (the notebook, or the worker's log)


def _nowhere(topic: str, msg: Any) -> None:
    """Where a LocalTrial's events would go."""


def run_again(
    fn: Callable,
    params: dict[str, Any],
    seed: int | None,
    exp_id: str,
    trial_id: int,
    stop_after: int | None = None,
    until_step: int | None = None,
) -> Any:
    """Run ``fn`` as trial ``trial_id`` ran (see the module's docstring) and return what it returned; None for a
    trial stopped where its run pruned it, or for a PBT segment, which ends at its checkpoint of ``until_step``
    (saved in a temporary folder, removed after). Whatever else it raises is raised here."""
    ctx = LocalTrial(exp_id, trial_id, stop_after)
    kwargs = dict(params)
    if _wants_reporter(fn):
        kwargs["reporter"] = Reporter(ctx)
    with contextlib.ExitStack() as stack:
        if until_step is not None:
            ctx.checkpoint_dir = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="jupyter_dist-again-")
            )
            ctx.until_step = until_step
        activate(ctx)
        try:
            # the kernel's own torch draws go on afterwards from where they were (random and NumPy untouched)
            with kept_torch_state(), seeded(seed):
                return fn(**kwargs)
        except SegmentDone:
            return None
        except TrialPruned:
            if stop_after is None:
                raise  # it stopped itself
            return None
        finally:
            activate(None)
            forget_experiment(ctx.exp_id)
