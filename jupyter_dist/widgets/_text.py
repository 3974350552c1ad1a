"""Text progress for terminals, scripts and frontends without widgets."""

from __future__ import annotations

import sys

from .._tracebacks import where_it_failed
from ..protocol import ErrorKind, TrialState
from ..store import TrialRecord
from ._base import ExperimentView, early_stopping_note, importances_table


class TextView(ExperimentView):
    """A progress line every couple of seconds, each failure as it happens, and a summary at the end."""

    max_rate = 0.5

    def __init__(self, exp, stream=None) -> None:
        super().__init__(exp)
        self.stream = stream or sys.stdout
        self._reported_failures: set[int] = set()
        self._reported_resumes: set[tuple[int, int]] = set()  # (trial id, attempts)
        self._last_line = ""
        self._running: set[int] = set()  # the trials running at the last draw

    def start(self) -> None:
        note = early_stopping_note(self.exp)
        self._print(
            f"{self.exp.kind} {self.exp.name!r}: {self.exp.total or '?'} trials on Dask"
            + (f" · {note}" if note else "")
            + (f" · dashboard {self.exp.dashboard_link}" if self.exp.dashboard_link else "")
        )

    def draw(self) -> None:
        self._tell_news(every_trial=False)
        line = self.exp.status_line()
        if line != self._last_line:
            self._last_line = line
            self._print(line)

    def _tell_news(self, every_trial: bool) -> None:
        """Print each failure and each resume from a checkpoint not said yet. While the run goes on it reads the
        failed trials (only when their count changed), the running ones and those that were running at the last
        draw, never every trial (a 100,000-trial run draws as fast as a small one); ``every_trial``: at the end,
        one pass over them all, for what began and ended between two draws."""
        record = self.exp.record
        if every_trial:
            records = record.trial_records()
            failed = [rec for rec in records if rec.state is TrialState.FAILED]
        else:
            failed = (
                record.failed_records()
                if record.counts()[TrialState.FAILED.value] != len(self._reported_failures)
                else []
            )
            running = record.running_records()
            now_running = {rec.trial_id for rec in running}
            ended = [record.trial(trial_id) for trial_id in sorted(self._running - now_running)]
            self._running = now_running
            records = ended + running
        for rec in failed:
            if rec.trial_id not in self._reported_failures:
                self._reported_failures.add(rec.trial_id)
                self._say_failure(rec)
        for rec in records:
            if (
                rec.resumed_from is not None
                and (rec.trial_id, rec.attempts) not in self._reported_resumes
                and self.exp._resume_is_news(rec)
            ):
                self._reported_resumes.add((rec.trial_id, rec.attempts))
                self._print(
                    f"  trial {rec.trial_id} (attempt {rec.attempts}) resumed from step {rec.resumed_from}"
                )

    def _say_failure(self, rec: TrialRecord) -> None:
        lines = (rec.error or "").strip().splitlines()
        # Running out of memory and a lost worker put their cause in the first line, the traceback after it (a
        # task that failed on Dask otherwise heads its traceback with "...failed on Dask:").
        cause_first = rec.error_kind is ErrorKind.MEMORY or (
            rec.error_kind is ErrorKind.LOST and bool(lines) and not lines[0].endswith(":")
        )
        said = (lines[:1] if cause_first else lines[-1:]) or ["(no traceback)"]
        where = where_it_failed(rec.error)
        at = f" at {where}" if where else ""
        self._print(f"  trial {rec.trial_id} failed: {said[0]}{at}  (exp.logs({rec.trial_id}) has it all)")

    def finish(self) -> None:
        self._tell_news(every_trial=True)
        self.draw()
        front = None
        if self.exp.record.definition.objective.several:  # every objective, for the trials no other beats
            front = self.exp.pareto
            self._print(f"Pareto front ({len(front)} trials):")
        for output in [*self.exp._final_outputs(), front, importances_table(self.exp)]:
            if hasattr(output, "to_string"):  # a table; figures need a notebook
                self._print(output.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep=""))

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
