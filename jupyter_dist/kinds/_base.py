"""One kind of experiment as the rest of the package sees it (``Kind``), and the registry of kinds.

Everything that differs between HPO, an ablation study and a data-parallel run is a method or an attribute of its
``Kind``: how its arguments become a definition, a trial function and a trial source; how it continues a stored
run; the Experiment class that reads its record; and what ``%%distribute`` offers for it. The run itself
(_orchestrate.py), ``load()`` and the magic only look kinds up here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentError
from ..experiment import Experiment
from ..protocol import ExperimentKind, Objective, TrialState
from ..store import ExperimentRecord, InMemoryRecord, TrialRecord
from ..trials import TrialSource
from ._options import RunOptions, TrialPlan

__all__ = [
    "Kind",
    "MagicOption",
    "MagicSpec",
    "check_same_objective",
    "experiment_of",
    "finished_and_rerun",
    "kind_of",
    "option",
    "register",
    "registered",
]


@dataclass(frozen=True)
class MagicOption:
    """An option of ``%%distribute`` that only its kind reads: ``add_argument``'s flags and keywords (the magic
    builds its parser from them; nothing here imports IPython)."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The option names a variable of the notebook (``--enqueue known_good``): the magic passes the entry point
    # that variable's value, looked up once the cell has run (the cell may define it).
    variable: bool = False

    @property
    def dest(self) -> str:
        return self.settings.get("dest") or self.flags[0].lstrip("-").replace("-", "_")


def option(*flags: str, variable: bool = False, **settings: Any) -> MagicOption:
    """``option("--trials", type=int, help=...)``, as argparse's ``add_argument`` is called; ``variable=True``:
    its value names a notebook variable (``MagicOption.variable``)."""
    return MagicOption(flags, {"default": None, **settings}, variable)


@dataclass(frozen=True)
class MagicSpec:
    """What ``%%distribute KIND`` offers for a kind."""

    options: tuple[MagicOption, ...] = ()  # the kind's own options
    refuses: tuple[str, ...] = ()  # the shared options it has no use for (as the parser names them)
    takes_space: bool = False  # the cell's search space (--space) is the entry point's second argument
    # The view ends with what the Experiment would show (an ablation study's summary): the cell returns None.
    view_shows_summary: bool = False


class Kind(ABC):
    """One kind of experiment: everything about it that is not the same for every kind."""

    name: ExperimentKind | str  # the definition's kind, the store's, and the magic's MODE
    # What its metric is for ("optimise", "compare"): it cannot run without one (metric=, --metric); None: a
    # metric is optional.
    metric_for: str | None = None
    magic: MagicSpec = MagicSpec()

    @abstractmethod
    def plan(self, fn: Callable, options: RunOptions, **arguments: Any) -> TrialPlan:
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
        return Experiment(record, stop)

    # --- what %%distribute needs -----------------------------------------------------------------------------
    def magic_arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        """The options the line gave (the entry point's own defaults stand for the rest), as the entry point's
        keyword arguments; an ArgumentError naming a malformed one."""
        return given

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
