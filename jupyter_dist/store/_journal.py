"""Writing one run to the store as it happens, in batches, from a thread of its own.

The record (_memory.py) hands the journal each change where it happens: trial starts and ends on the kernel's
main thread, reports, output lines and utilisation samples on the Dask IO thread. Handing over is an append to a
list (the IO thread never waits on a disk); the writer thread commits everything pending every FLUSH_INTERVAL_S
in one transaction, stamps the run's heartbeat, and looks for a stop request (JupyterLab's Stop button writes one
through the server extension). A kernel killed mid-run loses at most the last FLUSH_INTERVAL_S of reports and
output; a run that ends normally writes everything before ``hpo()`` returns.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import pickle
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import StoreError
from ..protocol import ExperimentState, TrialState
from . import _chunks
from ._base import EARLIER_RUNS_S, RUN_STARTED, ExperimentDefinition, TrialRecord, experiment_seconds
from ._codec import definition_to_json, dumps, fields_to_json, trial_fields, unpack_reports
from ._schema import owner
from ._sqlite import Database

FLUSH_INTERVAL_S = 0.5
# Captured output kept per trial; past it one line says how much was left out (the live view keeps it all).
LOG_CAP_BYTES = 2 << 20
# A data-parallel trial's return values are stored (pickled) up to this size.
RESULT_CAP_BYTES = 64 << 20
CLOSE_TIMEOUT_S = 60.0

log = logging.getLogger("jupyter_dist")


class Journal:
    """The store's side of one running experiment: create its row, then write what the record hands over."""

    def __init__(
        self,
        path: str,
        definition: ExperimentDefinition,
        about: dict[str, Any],
        *,
        name_given: bool,
        resume: bool = False,
    ) -> None:
        """Create the run's row under ``definition.name`` (or, unless ``name_given``, the first free name-2,
        name-3...): ``self.definition`` is the definition with the name it got. ``resume``: the row exists (same
        id); this process takes it over and marks it running again."""
        self.path = path
        self.experiment_id = definition.id
        self.definition = definition
        row = {
            "state": ExperimentState.RUNNING.value,
            "error": None,
            "ended": None,
            "about": dumps(about),
            "heartbeat": time.time(),
            **owner(),
        }
        db = Database(path)  # here, so a bad store file fails before anything runs
        try:
            with db.transaction():  # a new name is chosen and taken in one write transaction: no race
                if resume:
                    self.definition = definition = _continued(db, definition, row["heartbeat"])
                    db.update_experiment(definition.id, {**row, "definition": definition_to_json(definition)})
                    db.forget_stop_request(definition.id)
                else:
                    name = _free_name(db, definition.name, name_given, path)
                    self.definition = definition = dataclasses.replace(definition, name=name)
                    db.insert_experiment(
                        {
                            **row,
                            "id": definition.id,
                            "name": definition.name,
                            "kind": definition.kind,
                            "definition": definition_to_json(definition),
                            "created": definition.created,
                        }
                    )
        finally:
            db.close()
        self._lock = threading.Lock()  # guards _trials (kernel main thread vs writer)
        # Held while a batch goes to disk, and by a reader of the reports: what it reads from the file and what
        # is still pending then add up to everything handed over, with nothing twice.
        self._write_lock = threading.Lock()
        self.failed: str | None = None  # why the writer stopped, if it did
        # Called (once, on the writer thread) when a Stop button asks through the store (see Database.request_stop).
        self.on_stop_requested: Callable[[], None] | None = None
        self._stop_seen = False
        self._trials: dict[int, tuple] = {}
        self._reports: list[tuple] = []
        self._logs: list[tuple] = []
        self._usage: list[tuple] = []
        self._log_bytes: dict[int, int] = {}
        self._final: tuple[str, str | None, float] | None = None
        self._wake = threading.Event()
        self._writer = threading.Thread(target=self._run, name="jupyter_dist-store-writer", daemon=True)
        self._writer.start()

    # --- handed over by the record ------------------------------------------------------------------------
    def trial_changed(self, rec: TrialRecord) -> None:
        """A trial started or ended (kernel main thread): its whole row, as it is now. Its JSON is made by the
        writer, once per flush: a short trial starts, begins and ends within one, and encoding each change on
        the main thread, which dispatches the trials, cost the kernel ~1 us a report at 100 reports a trial
        (bench_scale, per-thread CPU times)."""
        value = rec.value if rec.value is None or math.isfinite(rec.value) else None
        result = _pickled_result(rec) if rec.state is not TrialState.RUNNING else None
        row = (rec.state.value, value, trial_fields(rec), result)
        with self._lock:
            self._trials[rec.trial_id] = row

    def reports(self, trial_id: int, attempt: int, rows: list) -> None:
        """A batch of report() calls (Dask IO thread): one append."""
        self._reports.append((trial_id, attempt, rows))

    def output(self, trial_id: int, stream: str, text: str) -> None:
        """A line of a trial's output (Dask IO thread)."""
        self._logs.append((trial_id, stream, text))

    def utilization(self, sample: tuple) -> None:
        """A trial's utilisation sample (Dask IO thread), a _utilization.Sample."""
        self._usage.append(sample)

    def close(self, state: ExperimentState, message: str | None, ended: float) -> None:
        """The run ended: write everything pending, the final state and what its end says, then stop the
        writer."""
        self._final = (state.value, message, ended)
        self._wake.set()
        self._writer.join(CLOSE_TIMEOUT_S)

    # --- the writer thread ----------------------------------------------------------------------------------
    def _run(self) -> None:
        db = None
        try:
            db = Database(self.path)
            while True:
                final = self._final
                self._write(db, final)
                if final is not None:
                    return
                self._wake.wait(FLUSH_INTERVAL_S)
        except Exception as exc:  # noqa: BLE001 - the run goes on; what is not written stays pending in memory
            self.failed = f"writing to the store {self.path} failed: {exc}"
            log.warning("jupyter_dist: experiment %s: %s", self.experiment_id, self.failed)
        finally:
            if db is not None:
                db.close()

    def _write(self, db: Database, final: tuple | None) -> None:
        with self._write_lock:
            with self._lock:
                changed, self._trials = self._trials, {}
            trials = {
                trial_id: (state, value, fields_to_json(fields), result)
                for trial_id, (state, value, fields, result) in changed.items()
            }
            # The IO thread appends meanwhile: write the first n, and drop them only once they are on disk (a
            # prefix deletion and an append cannot interleave under the GIL). A failed write stops the writer
            # and leaves them pending: batches_so_far() still has them.
            n_reports, n_logs, n_usage = len(self._reports), len(self._logs), len(self._usage)
            logs = self._capped(self._logs[:n_logs])
            self._commit(db, trials, self._reports[:n_reports], logs, final, self._usage[:n_usage])
            del self._reports[:n_reports]
            del self._logs[:n_logs]
            del self._usage[:n_usage]
        if final is None and self.on_stop_requested and not self._stop_seen:
            if db.stop_requested(self.experiment_id):
                self._stop_seen = True
                self.on_stop_requested()

    def batches_so_far(self) -> list[tuple[int, int, list]]:
        """Every report batch handed over so far, written or still pending, in arrival order: (trial_id, attempt
        number, [[step, metrics, sent_at], ...]). The record keeps none of them itself."""
        packed, pending = self.reports_so_far()
        with _chunks.gc_paused():
            out = [(t, a, rows) for blob in packed for t, a, rows in unpack_reports(blob)]
        out.extend(pending)
        return out

    def reports_so_far(self) -> tuple[list[bytes | str], list[tuple[int, int, list]]]:
        """Every report handed over so far: the run's chunks in the file, as stored (``_codec.pack_reports``'
        values), and the batches still pending, each in arrival order. The write lock is held only to read the
        packed chunks (a million reports: ~0.05 s) and copy the pending list, so that the two add up to
        everything with nothing twice; decoding them is the caller's, while the writer goes on."""
        with self._write_lock:
            db = Database(self.path)
            try:
                packed = _chunks.packed_reports(db.conn, self.experiment_id)
            finally:
                db.close()
            return packed, list(self._reports)

    def _commit(
        self, db: Database, trials: dict, reports: list, logs: list, final: tuple | None, usage: list
    ) -> None:
        db.write_batch(self.experiment_id, trials, reports, logs, final, usage)

    def _capped(self, logs: list[tuple]) -> list[tuple]:
        kept = []
        for trial_id, stream, text in logs:
            used = self._log_bytes.get(trial_id, 0)
            self._log_bytes[trial_id] = used + len(text)
            if used + len(text) <= LOG_CAP_BYTES:
                kept.append((trial_id, stream, text))
            elif used <= LOG_CAP_BYTES:
                kept.append(
                    (
                        trial_id,
                        stream,
                        f"\n[output truncated: this trial printed more than {LOG_CAP_BYTES >> 20} MiB;"
                        " the rest is not stored]\n",
                    )
                )
        return kept


def _continued(db: Database, definition: ExperimentDefinition, now: float) -> ExperimentDefinition:
    """``definition`` of a run taking over its stored experiment: its time so far is what its earlier runs ran
    (the stored run's, to its end or last heartbeat), and this run's clock starts ``now``."""
    stored = db.find(definition.id)
    assert stored is not None  # the run it takes over is in the store (Journal found it there)
    before = json.loads(stored["definition"]).get("details") or {}
    ended = stored["ended"] if stored["ended"] is not None else stored["heartbeat"]
    earlier = experiment_seconds(stored["created"], before, ended)
    details = {**definition.details, EARLIER_RUNS_S: earlier, RUN_STARTED: now}
    return dataclasses.replace(definition, details=details)


def _free_name(db: Database, name: str, name_given: bool, path: str) -> str:
    taken = db.names_like(name)
    if name not in taken:
        return name
    if name_given:
        raise StoreError(
            f"an experiment named {name!r} is already in the store ({path}): give this run another name=, or "
            "leave name= out to get a fresh one"
        )
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def _pickled_result(rec: TrialRecord) -> bytes | None:
    if rec.result is None and not rec.rank_results:
        return None
    try:
        blob = pickle.dumps({"result": rec.result, "rank_results": rec.rank_results})
    except Exception:  # noqa: BLE001 - not picklable: the record says so when read back
        return None
    return blob if len(blob) <= RESULT_CAP_BYTES else None
