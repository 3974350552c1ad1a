"""The type check `make lint` runs (mypy, [tool.mypy] in pyproject.toml) catches a class that no longer satisfies
one of the trial loop's seams (the Protocols of jupyter_dist/trials/_seams.py) where it is wired into a TrialLoop,
as jupyter_dist/_orchestrate.py wires DaskLauncher and the record: nothing but the checker looks at a Protocol.

One mypy run over one small module, with the same configuration; its cache in tmp_path, started from the package's
analysis that `make lint` leaves in .mypy_cache when there is one (seconds, instead of a cold minute and more)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
# [tool.mypy]'s python_version names the cache's folder.
CACHE_FOR = "3.10"

WIRING = '''
from typing import Any

from jupyter_dist.protocol import CheckpointEvent, LogLine, Objective, Outcome, ReportBatch, ReportRow
from jupyter_dist.store import InMemoryRecord
from jupyter_dist.trials import DaskLauncher, TrialLoop, TrialSpec
from jupyter_dist.trials._seams import TaskEnded


class Source:
    """Every method TrialSource asks for."""

    prunes = False

    def next_trial(self) -> TrialSpec | None:
        return None

    def remaining(self) -> int | None:
        return 0

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        pass


class RenamedSource:
    """next_trial() renamed: no longer a TrialSource."""

    prunes = False

    def next_spec(self) -> TrialSpec | None:
        return None

    def remaining(self) -> int | None:
        return 0

    def report(self, trial_id: int, rows: list[ReportRow]) -> bool:
        return False

    def tell(self, outcome: Outcome) -> None:
        pass


class DriftedLauncher(DaskLauncher):
    """settle() now takes a trial id where TrialLauncher passes the running trial."""

    def settle(self, trial: int, event: Outcome | TaskEnded) -> Outcome | None:  # type: ignore[override]
        return None


class Sink:
    """A record without checkpoint_arrived(): no longer a TrialSink."""

    def trial_started(
        self,
        trial_id: int,
        params: dict[str, Any],
        labels: dict[str, Any],
        queued: bool = False,
        distributions: dict[str, Any] | None = None,
    ) -> None:
        pass

    def trial_began(self, trial_id: int) -> None:
        pass

    def reports_arrived(self, batch: ReportBatch) -> None:
        pass

    def log_arrived(self, line: LogLine) -> None:
        pass

    def trial_pruned(self, trial_id: int) -> None:
        pass

    def metrics_so_far(self, trial_id: int) -> dict[str, float]:
        return {}

    def trial_finished(self, outcome: Outcome) -> object:
        return None


_ = CheckpointEvent


def wired(launcher: DaskLauncher, record: InMemoryRecord) -> TrialLoop:
    return TrialLoop(launcher, Source(), record, Objective("loss"), parallel=1)  # the real wiring: no error


def source_broken(launcher: DaskLauncher, record: InMemoryRecord) -> TrialLoop:
    return TrialLoop(launcher, RenamedSource(), record, Objective("loss"), parallel=1)  # fails


def launcher_broken(launcher: DriftedLauncher, record: InMemoryRecord) -> TrialLoop:
    return TrialLoop(launcher, Source(), record, Objective("loss"), parallel=1)  # fails


def sink_broken(launcher: DaskLauncher, record: Sink) -> TrialLoop:
    return TrialLoop(launcher, Source(), record, Objective("loss"), parallel=1)  # fails
'''


def _mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    module = tmp_path / "wiring.py"
    module.write_text(source.lstrip())
    cache = tmp_path / "mypy_cache"
    built = ROOT / ".mypy_cache" / CACHE_FOR
    if built.is_dir():
        shutil.copytree(built, cache / CACHE_FOR)
    out, err, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), str(module)]
    )
    return out + err, status


def test_a_class_that_no_longer_fits_a_seam_fails_the_type_check(tmp_path):
    out, status = _mypy(tmp_path, WIRING)
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out
    # The wiring that fits says nothing; each broken class is named where it is passed for its Protocol.
    marked = [n for n, line in enumerate(WIRING.lstrip().splitlines(), 1) if line.endswith("# fails")]
    assert sorted(int(line.split(":")[1]) for line in errors) == marked, out
    assert 'Argument 2 to "TrialLoop" has incompatible type "RenamedSource"; expected "TrialSource"' in out
    assert '"RenamedSource" is missing following "TrialSource" protocol member' in out
    assert (
        'Argument 1 to "TrialLoop" has incompatible type "DriftedLauncher"; expected "TrialLauncher"' in out
    )
    assert 'Argument 3 to "TrialLoop" has incompatible type "Sink"; expected "TrialSink"' in out
