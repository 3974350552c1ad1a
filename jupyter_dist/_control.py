"""What steers a run's trial loop besides its trial source: the user's callbacks, a per-trial stop rule, the
experiment's target, and the objective's scope (which of a trial's reports make its value).

Checked before any work starts (against the kind's objective), kept in the definition's details (``control``),
and, when a stored run is resumed, taken back from there for what the call leaves out, so the resumed run
decides as the first one did. Callbacks and a stop function are objects of the kernel: the details only name
them, and a resume needs them given again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._callbacks import Callback, CallbackHooks, check_callbacks, describe
from .errors import ArgumentError
from .integrations._configured import configured_trackers
from .kinds import RunOptions
from .protocol import Objective
from .trials import Constraints, StopRule, check_target

if TYPE_CHECKING:
    from .experiment import Experiment
    from .store import ExperimentDefinition, InMemoryRecord

__all__ = ["RunControl", "as_resumed"]

DETAILS_KEY = "control"


@dataclass(frozen=True)
class RunControl:
    callbacks: tuple[Callback, ...] = ()
    stop_rule: StopRule | None = None
    target: float | None = None
    scope: str = "last"
    constraints: Constraints | None = None

    @classmethod
    def of(cls, options: RunOptions, objective: Objective, source: Any = None) -> RunControl:
        """The control ``options`` ask for, checked against the kind's ``objective`` and trial ``source``."""
        return cls(
            callbacks=configured_trackers(check_callbacks(options.callbacks, source)),
            stop_rule=StopRule.of(options.stop, objective),
            target=check_target(options.target, objective),
            scope=options.scope,
            constraints=Constraints.of(options.constraints),
        )

    def details(self) -> dict[str, Any]:
        """What the definition's details keep (JSON)."""
        return {
            "callbacks": describe(self.callbacks),
            "stop": None if self.stop_rule is None else self.stop_rule.describe(),
            "target": self.target,
            "objective_scope": self.scope,
            **({} if self.constraints is None else {"constraints": self.constraints.describe()}),
        }

    def applied(self, definition: ExperimentDefinition) -> ExperimentDefinition:
        """``definition`` with this control in its details and the scope in its objective."""
        objective = dataclasses.replace(definition.objective, scope=self.scope)
        details = {**definition.details, DETAILS_KEY: self.details()}
        return dataclasses.replace(definition, objective=objective, details=details)

    def hooks(self, exp: Experiment, source: Any = None) -> CallbackHooks | None:
        return CallbackHooks(self.callbacks, exp, source) if self.callbacks else None


def as_resumed(options: RunOptions, prior: InMemoryRecord) -> RunOptions:
    """``options`` for resuming ``prior``: the scope, target and stop thresholds it ran with where the call gives
    none; a scope other than the one it ran with is refused (its stored trials' values were made with that)."""
    stored = prior.definition.details.get(DETAILS_KEY) or {}
    scope = stored.get("objective_scope", "last")
    if options.objective_scope not in (None, scope):
        raise ArgumentError(
            f"objective_scope={options.objective_scope!r}: {prior.definition.name!r} ran with "
            f"objective_scope={scope!r}, which made its stored trials' values; resume it with that one (or "
            "leave objective_scope out)"
        )
    given = {"objective_scope": scope}
    if options.target is None:
        given["target"] = stored.get("target")
    if options.stop is None and isinstance(stored.get("stop"), dict):
        given["stop"] = stored["stop"]
    return dataclasses.replace(options, **given)
