"""``exp.extend(trial_id, max_steps=N)``: a finished trial trained on from its newest checkpoint to N steps, as
that trial's next attempt.

Everything that can refuse is checked here, before any work starts: the experiment has ended, the trial exists
and finished, it checkpointed, N is beyond the steps it trained, the arguments given are the function's. What then
runs is one trial of the experiment, the same id, under the run's own machinery (_orchestrate.extend_trial, which
registers itself here: this layer cannot import the one that runs experiments): its task writes the trial's own
checkpoint folder, so ``restore()`` finds the newest one and the function goes on from there; it ends, completed,
at its checkpoint of step N - 1 (the PBT segment mechanism, ``until_step``).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError
from ..protocol import ExperimentState, Outcome, ReportRow, TrialState
from ..space import accepted_arguments
from ..store import EXTENDED, TrialRecord
from ..trials import TrialSpec
from ._reproduce import defined_again, trial_of

__all__ = ["ExtendWarning", "Extension", "OneTrial", "extend", "runs_extensions"]

# A trial that finished this way trains on; a failed one is for exp.reproduce, an interrupted one for resume.
EXTENDABLE = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.STOPPED)


class ExtendWarning(UserWarning):
    """An extension that did not train as asked: the function's own budget ended it, or it found no checkpoint."""


@dataclass(frozen=True)
class Extension:
    """What ``exp.extend`` runs: the trial function as its kind runs it, the trial to run, and its steps before."""

    fn: Callable
    spec: TrialSpec
    steps_before: int
    given: dict[str, Any]


class OneTrial:
    """A trial source of one trial, never pruned: the extension has no peers to be judged against."""

    prunes = False

    def __init__(self, spec: TrialSpec) -> None:
        self._spec: TrialSpec | None = spec

    def next_trial(self) -> TrialSpec | None:
        spec, self._spec = self._spec, None
        return spec

    def remaining(self) -> int | None:
        return 0 if self._spec is None else 1

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        pass


_runner: Callable[..., Any] | None = None


def runs_extensions(runner: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``runner(exp, extension, cluster=, progress=)`` what runs an extension (the run's layer's)."""
    global _runner
    _runner = runner
    return runner


def extend(
    exp: Any, trial_id: int, max_steps: int, fn: Callable | None, cluster: Any, progress: Any, params: dict
) -> Any:
    """See ``Experiment.extend``. ``exp``: the Experiment (typed Any: it imports this module)."""
    extension = extension_of(exp, trial_id, max_steps, fn, params)
    assert _runner is not None  # _orchestrate registers it as the package is imported
    _runner(exp, extension, cluster=cluster, progress=progress)
    _warn_if_short(exp, extension, max_steps)
    return exp


def extension_of(exp: Any, trial_id: int, max_steps: int, fn: Callable | None, params: dict) -> Extension:
    """The extension ``exp.extend`` runs, or an ArgumentError naming what cannot work."""
    if exp.state is ExperimentState.RUNNING:
        raise ArgumentError(
            f"{exp.name!r} is still running: extend a trial once the experiment has ended (exp.stop() ends it "
            "gracefully)"
        )
    rec = trial_of(exp, trial_id)
    if rec.state not in EXTENDABLE:
        what = {
            TrialState.FAILED: "it failed: exp.reproduce(trial_id) runs it again in the kernel, to debug it",
            TrialState.INTERRUPTED: "it was interrupted: resume=True runs it again",
        }.get(rec.state, f"it is {rec.state}")
        raise ArgumentError(f"trial {trial_id} of {exp.name!r} cannot be extended: {what}")
    exp._extendable(rec)
    if rec.checkpoint is None or rec.checkpoint_step is None:
        raise ArgumentError(
            f"trial {trial_id} of {exp.name!r} saved no checkpoint: extend trains a trial on from its newest one. "
            "Save the state with jupyter_dist.checkpoint(step, state) and load it at the start with "
            "jupyter_dist.restore(state) (the checkpoints how-to), then run the experiment again"
        )
    done = max(rec.steps, rec.checkpoint_step + 1)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps <= done:
        raise ArgumentError(
            f"max_steps={max_steps!r}: trial {trial_id} of {exp.name!r} has trained {done} steps already; give "
            f"a number of steps beyond them (max_steps > {done})"
        )
    if fn is not None and not callable(fn):
        raise ArgumentError(f"fn={fn!r:.60} is not a function: give the training function, or leave fn out")
    user_fn = fn or exp._function or defined_again((exp._about or {}).get("function"), exp.name, "extend")
    accepted = accepted_arguments(user_fn)
    unknown = sorted(set(params) - accepted) if accepted is not None else []
    if unknown:
        raise ArgumentError(
            f"{unknown[0]}= is not an argument of {getattr(user_fn, '__name__', 'the function')}(): extend passes "
            f"its keywords to the function (it takes {', '.join(sorted(accepted or ())) or 'none'})"
        )
    spec = TrialSpec(
        rec.trial_id,
        {**rec.params, **params},
        labels={**rec.labels, EXTENDED: max_steps},
        distributions=rec.distributions,
        until_step=max_steps - 1,
        seed=rec.seed,
    )
    return Extension(exp._trial_function(user_fn), spec, done, dict(params))


def _warn_if_short(exp: Any, extension: Extension, max_steps: int) -> None:
    """Say so when the extension did not train as asked: it started over, or its own budget ended it early."""
    rec: TrialRecord = exp.record.trial(extension.spec.trial_id)
    if rec.state is not TrialState.COMPLETED:
        return  # failed or stopped: its state and error say it
    if rec.resumed_from is None:
        warnings.warn(
            f"trial {rec.trial_id} found no checkpoint and trained from its first step again (its checkpoints "
            "are gone, or the function does not call jupyter_dist.restore(state))",
            ExtendWarning,
            stacklevel=3,
        )
    elif rec.steps < max_steps:
        budget = _budget_arguments(extension, rec)
        hint = (
            f"; give it the new one too: exp.extend({rec.trial_id}, max_steps={max_steps}, "
            f"{budget[0]}={max_steps})"
            if budget
            else ": give the argument that bounds its steps as a keyword of extend"
        )
        warnings.warn(
            f"trial {rec.trial_id} ended at {rec.steps} of max_steps={max_steps} steps: its function's own budget "
            f"stopped it{hint}",
            ExtendWarning,
            stacklevel=3,
        )


def _budget_arguments(extension: Extension, rec: TrialRecord) -> list[str]:
    """The function's integer arguments (the trial's, or their defaults) that equal the steps it had trained:
    likely what bounds its loop."""
    user_fn = getattr(extension.fn, "fn", extension.fn)
    try:
        defaults = {
            name: p.default
            for name, p in inspect.signature(user_fn).parameters.items()
            if p.default is not inspect.Parameter.empty
        }
    except (TypeError, ValueError):
        defaults = {}
    arguments = {**defaults, **rec.params}
    return [
        name
        for name, value in arguments.items()
        if isinstance(value, int)
        and not isinstance(value, bool)
        and value == extension.steps_before
        and name not in extension.given
    ]
