"""One kind of experiment as the rest of the package sees it (``Kind``), and the registry of kinds.

Everything that differs between HPO, an ablation study and a data-parallel run is a method or an attribute of its
``Kind``: how its arguments become a definition, a trial function and a trial source; how it continues a stored
run; the Experiment class that reads its record; and what ``%%distribute`` offers for it. The run itself
(_orchestrate.py), ``load()`` and the magic only look kinds up here.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError
from ..experiment import Experiment
from ..protocol import ExperimentKind, Objective, TrialState
from ..store import ExperimentRecord, InMemoryRecord, TrialRecord
from ..trials import TrialSource
from ._plan import TrialPlan
from ._run_options import RunOptions
from ._spec import Entry, entries

__all__ = [
    "Kind",
    "MagicSpec",
    "check_same_objective",
    "experiment_of",
    "finished_and_rerun",
    "kind_of",
    "register",
    "registered",
]


@dataclass(frozen=True)
class MagicSpec:
    """What ``%%distribute KIND`` offers for a kind."""

    takes_space: bool = False  # the cell's search space (--space) is the entry point's second argument
    # The view ends with what the Experiment would show (an ablation study's summary): the cell returns None.
    view_shows_summary: bool = False


class Kind(ABC):
    """One kind of experiment: everything about it that is not the same for every kind."""

    name: ExperimentKind | str  # the definition's kind, the store's, and the magic's MODE
    # Its own arguments: a dataclass of options (_spec.option), each defined once for its entry point's docstring
    # and the magic; the RunOptions it takes are those whose Spec names it.
    arguments: type
    # Run options it does not let its user set, and their values (a data-parallel run is one trial at a time).
    fixed: Mapping[str, Any] = {}
    # What its metric is for ("optimise", "compare"): it cannot run without one (metric=, --metric); None: a
    # metric is optional.
    metric_for: str | None = None
    magic: MagicSpec = MagicSpec()
    # What its run returns and a stored run of it loads as.
    experiment_class: type[Experiment] = Experiment

    @abstractmethod
    def plan(self, fn: Callable, options: RunOptions, args: Any) -> TrialPlan:
        """Check the kind's own arguments (an ArgumentError naming the one that cannot work, before any work
        starts) and say what to run; its definition's details leave out the checkpoint settings (the run adds
        them, as ``options`` say)."""

    @abstractmethod
    def resume(self, prior: InMemoryRecord, plan: TrialPlan, options: RunOptions) -> TrialPlan:
        """What to run to continue ``prior``, the stored run of this kind named ``options.name``: ``plan`` under
        the stored definition's id and name."""

    def experiment(
        self,
        record: ExperimentRecord,
        stop: Callable[[], None] | None = None,
        source: TrialSource | None = None,
    ) -> Experiment:
        """The Experiment over ``record``: a live run's (``source`` is its trial source) or one read back."""
        return self.experiment_class(record, stop)

    # --- its options, as the entry point and %%distribute take them -------------------------------------------
    def entries(self) -> list[Entry]:
        """Its own arguments, then the run options it takes, as its entry point names them."""
        kind = str(self.name)
        return entries(self.arguments, kind, shared=False) + [
            e for e in entries(RunOptions, kind, shared=True) if e.field not in self.fixed
        ]

    def sort(self, given: Mapping[str, Any]) -> tuple[RunOptions, Any]:
        """The entry point's arguments (or the magic's) as RunOptions and the kind's own; what ``given`` leaves out
        is the entry's default."""
        found = self.entries()
        unknown = sorted(set(given) - {entry.name for entry in found})
        if unknown:
            raise ArgumentError(f"{unknown[0]}= is not an argument of a {self.name} experiment")
        own: dict[str, Any] = {}
        run: dict[str, Any] = dict(self.fixed)
        for entry in found:
            if entry.name in given:
                value = given[entry.name]
            elif entry.default is dataclasses.MISSING:
                raise ArgumentError(f"{self.name} needs {entry.name}=")
            else:
                value = entry.default
            (run if entry.shared else own)[entry.field] = value
        return RunOptions(**run), self.arguments(**own)

    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        """The options the line gave, as the entry point takes them (each Spec's ``parse``); an ArgumentError
        naming a malformed one. The entries' defaults stand for the rest."""
        parsed = dict(given)
        for entry in self.entries():
            if entry.spec.parse is not None and parsed.get(entry.name) is not None:
                parsed[entry.name] = entry.spec.parse(parsed[entry.name])
        return parsed

    def magic_needs(self, arguments: dict[str, Any]) -> Iterable[str]:
        """Arguments the training function must take, to tell it from helpers the cell defines beside it."""
        return ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


_registry: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Make ``kind`` one the package runs, loads and offers in the magic."""
    _registry[str(kind.name)] = kind
    return kind


def registered() -> tuple[Kind, ...]:
    """Every kind, in the order they were registered (the magic's options follow it)."""
    return tuple(_registry.values())


def kind_of(name: str) -> Kind:
    try:
        return _registry[str(name)]
    except KeyError:
        known = ", ".join(_registry)
        raise ArgumentError(f"experiment kind {name!r} is not known: use one of {known}") from None


def experiment_of(
    record: ExperimentRecord, stop: Callable[[], None] | None = None, source: TrialSource | None = None
) -> Experiment:
    """The Experiment class of the record's kind over it; a plain Experiment for a kind this version does not
    know (a stored run of a later version's kind still loads, as its trials and history)."""
    kind = _registry.get(str(record.definition.kind))
    return Experiment(record, stop) if kind is None else kind.experiment(record, stop, source)


# --- continuing a stored run ----------------------------------------------------------------------------------
def finished_and_rerun(record: InMemoryRecord) -> tuple[list[TrialRecord], list[TrialRecord]]:
    """The stored trials a resumed run keeps (completed, pruned, failed) and those it runs again (the ones a
    dead kernel or a stop left unfinished)."""
    keep = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED)
    records = record.trial_records()
    return [r for r in records if r.state in keep], [r for r in records if r.state not in keep]


def check_same_objective(prior: InMemoryRecord, objective: Objective, name: str | None) -> None:
    """A run named ``name`` continues only under the metric and mode it was started with."""
    stored = prior.definition
    if (stored.objective.metrics, stored.objective.directions) != (objective.metrics, objective.directions):
        raise ArgumentError(
            f"{name!r} optimised {_said(stored.objective)}; resume it with the same metric and mode, not "
            f"{_said(objective)}"
        )


def _said(objective: Objective) -> str:
    return ", ".join(
        f"{m!r} ({d.value})" for m, d in zip(objective.metrics, objective.directions, strict=True)
    )
