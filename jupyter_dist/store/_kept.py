"""What the in-memory record keeps, and how it is read (its writing half, the trial loop's: _memory.py): the
running trials as records, the ended ones as columns (_finished.py), the reports where no store keeps them; the
answers a view that polls reads without walking every trial; and a record read back from the store.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import ErrorKind, ExperimentState, TrialState
from . import _report_columns
from ._base import QUEUED, ExperimentDefinition, TrialRecord, best_first
from ._finished import FinishedTrials
from ._record import ExperimentRecord
from ._sqlite import Database
from ._utilization import UtilizationColumns

if TYPE_CHECKING:
    from ._journal import Journal


_R = TypeVar("_R", bound="KeptRecord")


class KeptRecord(ExperimentRecord):
    """An experiment's record as the kernel keeps it, read; ``InMemoryRecord`` writes it."""

    def __init__(self, definition: ExperimentDefinition, journal: Journal | None = None) -> None:
        super().__init__(definition)
        self._journal = journal
        # The running trials as records, the ended ones as columns: a 100,000-trial run keeps no record object of
        # an ended trial (1.4 KB each), only its row (about 150 bytes for a plain search's).
        self._trials: dict[int, TrialRecord] = {}
        self._finished = FinishedTrials()
        self._ranking: tuple[int, Any] = (-1, None)  # (the columns' version, their best_first order)
        self._best: TrialRecord | None = None
        self._lock = threading.Lock()
        # Report batches as they arrived, (trial_id, attempt number, [[step, metrics, sent_at], ...]), kept here
        # only when no journal keeps them: the store has them anyway, and a million reports held as Python
        # objects cost the kernel about 280 MB (bench_scale: RSS peak 554 MB without a store, 277 MB with one).
        self._batches: list[tuple[int, int, list]] = []
        self._report_count = 0
        # The trials' utilisation samples, kept here with a journal too: one a second per trial, 48 bytes each.
        self._usage = UtilizationColumns()
        # A record read back from the store: what reads its reports, output and utilisation samples, until
        # load_details() has, and its store's path and its id.
        self._unread: Callable[[], tuple[Iterable, Iterable, Iterable]] | None = None
        self._source: tuple[str, str] | None = None

    def _consider_best(self, rec: TrialRecord) -> None:
        if rec.state is TrialState.COMPLETED and rec.value is not None:
            best = self._best
            if best is None or best.value is None or self.definition.objective.better(rec.value, best.value):
                self._best = rec

    @classmethod
    def restored(
        cls: type[_R],
        definition: ExperimentDefinition,
        trials: Iterable[TrialRecord | dict[str, Any]],
        details: Callable[[], tuple[Iterable, Iterable, Iterable]],
        *,
        state: ExperimentState,
        message: str | None,
        ended: float | None,
        source: tuple[str, str] | None = None,
    ) -> _R:
        """A finished record rebuilt from the store. ``details()`` gives its report batches in arrival order,
        (trial_id, attempt number, [[step, metrics, sent_at], ...]), its output (trial_id, stream, text) and its
        utilisation samples (_utilization.Sample); it is called only when one of them is first needed
        (``load_details``). ``trials``: records, or the stored fields of trials that ended (_codec.trial_fields'
        JSON), which go into the columns at once."""
        self = cls(definition)
        stored = []
        for trial in trials:
            if isinstance(trial, TrialRecord):
                self.restore(trial)
            else:
                stored.append(trial)
        self._finished.add_all(stored)
        sign = -1.0 if definition.objective.direction.value == "max" else 1.0
        row = self._finished.best_row(sign)
        self._best = None if row is None else self._finished.record(row)
        self._unread, self._source = details, source
        self.state, self.message, self.ended = state, message, ended
        return self

    def restore(self, rec: TrialRecord) -> None:
        """A trial read back from the store: running (a run still going, read by another process), or ended."""
        if rec.state is TrialState.RUNNING:
            self._trials[rec.trial_id] = rec
        else:
            self._finished.add(rec)

    def load_details(self) -> None:
        if self._unread is None:
            return
        with self._lock:
            if self._unread is None:  # another thread did it meanwhile
                return
            batches, output, usage = self._unread()
            self._read_back(batches, output)
            self._usage.extend(usage)
            self._unread = None

    def _read_back(self, batches: Iterable, output: Iterable) -> None:
        metric = self.curve_metric
        finished = self._finished
        curve_attempts: dict[int, int] = {}  # the attempt each trial's curve so far is of
        # Each trial's curve as it is assembled: a running one's own lists, an ended one's new ones, given to its
        # row at the end.
        curves: dict[int, tuple[list, list]] = {}
        for trial_id, attempt, rows in batches:
            curve = curves.get(trial_id)
            if curve is None:
                rec = self._trials.get(trial_id)
                if rec is not None:
                    curve = curves[trial_id] = (rec.curve_steps, rec.curve_values)
                elif trial_id in finished:
                    curve = curves[trial_id] = ([], [])
                else:
                    continue
            self._report_count += len(rows)
            self._batches.append((trial_id, attempt, rows))
            if metric is None:
                metric = self.curve_metric = next(iter(rows[0][1]), None)
            # As the views assemble curves (store/_curves.assemble_curves): a later attempt's points replace the
            # earlier ones' from its first step on, so one resumed from a checkpoint (after a lost worker, or
            # trained on by exp.extend, however many times) continues the curve and one started over replaces it.
            newest = curve_attempts.get(trial_id, -1)
            if attempt < newest:
                continue  # a late report of an attempt that was replaced
            steps, values = curve
            for step, metrics, _ in rows:
                if metric not in metrics:
                    continue
                if attempt > newest:
                    kept = next((i for i, s in enumerate(steps) if s >= step), len(steps))
                    del steps[kept:], values[kept:]
                    newest = curve_attempts[trial_id] = attempt
                steps.append(step)
                values.append(metrics[metric])
        for trial_id, (steps, values) in curves.items():
            if trial_id in finished and steps:
                finished.set_curve(finished.row(trial_id), steps, values)
        for trial_id, stream, text in output:
            rec = self._trials.get(trial_id)
            if rec is not None:
                (rec.stdout if stream == "stdout" else rec.stderr).append(text)
            elif trial_id in finished:
                finished.add_output(finished.row(trial_id), stream, text)

    # --- read by Experiment ---------------------------------------------------------------------------------
    def trial(self, trial_id: int) -> TrialRecord:
        self.load_details()
        return self.trial_without_details(trial_id)

    def trial_without_details(self, trial_id: int) -> TrialRecord:
        # load()'s record reads every trial's reports and output for trial() (a 100,000-trial run's took 1.4 s):
        # exp.checkpoint(n) and a population's status line need neither.
        with self._lock:
            rec = self._trials.get(trial_id)
            if rec is not None:
                return rec
            return self._finished.record(self._finished.row(trial_id))

    def trial_logs(self, trial_id: int) -> str:
        if self._unread is None or self._source is None:  # the output is in the record already
            return super().trial_logs(trial_id)
        # load()'s record, its details not read yet: this trial's output alone from the store, rather than every
        # trial's reports and output. On a copy: the details, once read, fill the record's own.
        rec = self.trial_without_details(trial_id)
        if self._trials.get(trial_id) is rec:  # the record kept, not one made again from its row
            rec = dataclasses.replace(rec, stdout=[], stderr=[])
        path, experiment_id = self._source
        db = Database(path)
        try:
            for stream, text in db.trial_output(experiment_id, trial_id):
                (rec.stdout if stream == "stdout" else rec.stderr).append(text)
        finally:
            db.close()
        return rec.logs

    def trial_records(self) -> list[TrialRecord]:
        """Every trial as a record, by trial id: an ended trial's made again from its row (0.5 s for 100,000),
        so what polls reads ``counts``, ``ranked`` and ``running_records`` instead."""
        with self._lock:  # the loop may move a trial from the running to the ended meanwhile
            running = dict(self._trials)
            rows = self._finished.rows()
        records = [*running.values(), *self._finished.records(rows)]
        return sorted(records, key=lambda rec: rec.trial_id) if running else records

    def best(self) -> TrialRecord | None:
        return self._best

    def counts(self) -> dict[str, int]:
        with self._lock:
            running = list(self._trials.values())
            counts = {state.value: n for state, n in self._finished.counts.items()}
        counts[QUEUED] = 0
        for rec in running:
            counts[QUEUED if rec.queued else rec.state.value] += 1
        return counts

    def trial_count(self) -> int:
        with self._lock:
            return len(self._trials) + len(self._finished)

    def running_records(self) -> list[TrialRecord]:
        with self._lock:
            running = [rec for rec in self._trials.values() if rec.state is TrialState.RUNNING]
        return sorted(running, key=lambda rec: rec.trial_id)

    def failed_records(self) -> list[TrialRecord]:
        with self._lock:
            finished = self._finished
            rows = [row for row in finished.rows() if finished.state(row) is TrialState.FAILED]
            return finished.records(rows)

    def ranked(
        self, offset: int = 0, limit: int | None = None, state: TrialState | None = None
    ) -> list[TrialRecord]:
        stop = None if limit is None else offset + limit
        if state is TrialState.RUNNING:  # the running trials are records already: no column to read
            return best_first(self.running_records(), self.definition.objective)[offset:stop]
        if self.definition.objective.metric is None:  # a data-parallel run: one trial, by id
            return super().ranked(offset, limit, state)
        with self._lock:
            running = [] if state is not None else list(self._trials.values())
            best, rest = self._ranked_rows()
            if state is TrialState.COMPLETED:  # one without a value ranks below those with one
                rows = [*best.tolist(), *(row for row in rest.tolist() if self._finished.state(row) is state)]
                rows = rows[offset:stop]
            elif state is not None:
                rows = [row for row in rest.tolist() if self._finished.state(row) is state][offset:stop]
            else:
                ordered = best_first(running, self.definition.objective)
                page = [*best.tolist(), *(None for _ in ordered), *rest.tolist()][offset:stop]
                return [
                    self._finished.record(row) if row is not None else ordered[i - len(best)]
                    for i, row in enumerate(page, start=offset)
                ]
            return self._finished.records(rows)

    def _ranked_rows(self) -> tuple[Any, Any]:
        """The ended trials' ``FinishedTrials.ranking``, kept until one more ends (called under the lock)."""
        version, ranking = self._ranking
        if version != self._finished.version:
            sign = -1.0 if self.definition.objective.direction.value == "max" else 1.0
            ranking = self._finished.ranking(sign)
            self._ranking = (self._finished.version, ranking)
        return ranking

    def param_names(self) -> list[str]:
        with self._lock:
            running = list(self._trials.values())
            names = list(self._finished.params)
        return list(dict.fromkeys([*names, *(name for rec in running for name in rec.params)]))

    def ended_totals(self) -> dict[str, float]:
        with self._lock:
            return self._finished.totals(self.definition.max_steps)

    def out_of_memory(self, limit: int | None = None) -> tuple[int, list[TrialRecord]]:
        with self._lock:
            rows = self._finished.sparse_rows("error_kind", ErrorKind.MEMORY)
            return len(rows), self._finished.records(rows[:limit])

    def varied_params(self) -> list[str]:
        with self._lock:
            running = list(self._trials.values())
            seen = self._finished.varied() if len(self._finished) else {}
            if len(self._finished) + len(running) < 2:
                return []
        names = self.param_names()
        for name in names:
            values = seen.setdefault(name, {"None"} if len(self._finished) else set())
            values.update(repr(rec.params.get(name)) for rec in running)
        return [name for name in names if len(seen[name]) > 1]

    def report_columns(self) -> dict[str, Any]:
        if self._journal is not None:  # a stored run, live or just finished
            return _report_columns.columns_from_journal(self._journal)
        if self._unread is not None and self._source is not None:  # load()'s record: its curves not rebuilt
            path, experiment_id = self._source
            return _report_columns.columns_from_store(path, experiment_id)
        with self._lock:  # no store, or the details read already
            batches = list(self._batches)
        return _report_columns.columns_from_batches(batches)

    def trials_table(self) -> tuple[list[TrialRecord], dict[str, Any]]:
        """The running trials' records and the ended trials' ``FinishedTrials.columns``, by trial id: what the
        trials table is built from without a record per ended trial."""
        with self._lock:
            running = sorted(self._trials.values(), key=lambda rec: rec.trial_id)
            return running, self._finished.columns(self._finished.row_index())

    def report_rows(self) -> Iterator[tuple[int, int, int, str, float, float]]:
        self.load_details()
        if self._journal is not None:
            batches = self._journal.batches_so_far()
        else:
            with self._lock:
                batches = list(self._batches)
        for trial_id, attempt, rows in batches:
            for step, metrics, sent_at in rows:
                for name, value in metrics.items():
                    yield trial_id, attempt, step, name, value, sent_at

    def report_count(self) -> int:
        self.load_details()
        return self._report_count

    def utilization(self) -> UtilizationColumns:
        self.load_details()
        return self._usage

    @property
    def stored(self) -> bool:
        return self._journal is not None

    @property
    def store_problem(self) -> str | None:
        return self._journal.failed if self._journal else None
