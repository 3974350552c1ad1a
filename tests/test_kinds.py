"""The registry of kinds is the one place a kind is described: a kind registered here, in the test, runs through
the API's run, loads back from the store and runs from %%distribute, with no other module edited."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

import jupyter_dist as jd
from jupyter_dist import kinds
from jupyter_dist._orchestrate import run_kind
from jupyter_dist.errors import ArgumentError
from jupyter_dist.experiment import Experiment
from jupyter_dist.kinds import Kind, RunOptions, TrialPlan, option
from jupyter_dist.protocol import Objective
from jupyter_dist.store import ExperimentDefinition
from jupyter_dist.trials import TrialSpec


class Runs:
    """The function, ``times`` times over, unchanged."""

    prunes = False

    def __init__(self, times: int) -> None:
        self.times, self.given = times, 0

    def next_trial(self) -> TrialSpec | None:
        if self.given == self.times:
            return None
        self.given += 1
        return TrialSpec(self.given - 1, {})

    def remaining(self) -> int:
        return self.times - self.given

    def report(self, trial_id, rows) -> bool:
        return False

    def tell(self, outcome) -> None:
        pass


class Averaged(Experiment):
    @property
    def mean(self) -> float:
        values = [rec.value for rec in self.trial_records()]
        return sum(values) / len(values)


@dataclass(frozen=True)
class RepeatArguments:
    times: int = option(
        3, help="How many runs.", short="repeat: how many runs (default 3)", magic={"type": int}
    )
    metric: str = option("score", help="The metric averaged.", short="the metric to average")


class Repeat(Kind):
    """A toy kind: run the function several times and average its metric."""

    name = "repeat"
    metric_for = "average"
    arguments = RepeatArguments

    def plan(self, fn, options: RunOptions, args: RepeatArguments) -> TrialPlan:
        if args.times < 1:
            raise ArgumentError(f"times={args.times!r}: give a positive number of runs")
        definition = ExperimentDefinition(
            self.name,
            options.experiment_name(fn),
            Objective(args.metric),
            total=args.times,
            timeout=options.timeout,
        )
        return TrialPlan(definition, fn, Runs(args.times))

    def resume(self, prior, plan, options):
        raise ArgumentError("a repeat cannot be resumed")

    def experiment(self, record, stop=None, source=None) -> Experiment:
        return Averaged(record, stop)


def score(base=1.0):
    jd.report(step=0, score=base)
    return {"score": base * 2}


@pytest.fixture
def repeat_kind(monkeypatch):
    kind = Repeat()
    monkeypatch.setitem(kinds._base._registry, kind.name, kind)
    return kind


def test_a_registered_kind_runs_stores_and_loads_as_its_own_experiment(repeat_kind, client):
    exp = run_kind(
        "repeat",
        score,
        RunOptions(cluster=client, progress=False, name="twice"),
        RepeatArguments(times=2, metric="score"),
    )
    assert isinstance(exp, Averaged) and exp.kind == "repeat" and exp.state == "completed"
    assert exp.mean == 2.0 and len(exp.trials) == 2
    assert list(jd.experiments()["kind"]) == ["repeat"]
    loaded = jd.load("twice")
    assert isinstance(loaded, Averaged) and loaded.mean == 2.0
    assert loaded.status_line().startswith("repeat 'twice' completed: 2/2 trials done")


def test_a_registered_kind_runs_from_the_magic_with_its_own_options(repeat_kind, client):
    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "jupyter_dist")
    cell = "import jupyter_dist as jd\ndef doubled(base=1.5):\n    return {'score': base * 2}\n"
    exp = ip.run_cell_magic("distribute", "repeat --times 2 --metric score", cell)
    assert isinstance(exp, Averaged) and exp.mean == 3.0 and exp.name == "doubled"
    with pytest.raises(UsageError, match="--trials, --mode: not an option of %%distribute repeat"):
        ip.run_cell_magic("distribute", "repeat --times 2 --trials 3 --mode min", cell)
    with pytest.raises(UsageError, match="--times: not an option of %%distribute hpo"):
        ip.run_cell_magic("distribute", "hpo --metric score --times 2", cell)
    with pytest.raises(UsageError, match="needs --metric NAME, the metric to average"):
        ip.run_cell_magic("distribute", "repeat --times 2", cell)
    with pytest.raises(UsageError, match="unknown mode; use one of hpo, pbt, ablation, ddp, repeat"):
        ip.run_cell_magic("distribute", "tune", cell)
