"""What the trials used (schema 4): utilisation samples, about one a second per running trial, as the workers sent
them (trials/_utilization.py says what each column means and what it leaves out).

In the kernel a record keeps them column by column in typed arrays (``UtilizationColumns``): 48 bytes a sample,
where a tuple of six numbers costs ~200. On disk they are one row each, written with the run's other changes by its
writer thread (_journal.py): a hundred trials at once add a hundred short rows a second, a few kB.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from array import array
from collections.abc import Iterable

__all__ = [
    "COLUMNS",
    "TABLE",
    "Sample",
    "UtilizationColumns",
    "insert",
    "migrate_from_schema_3",
    "samples_after",
]

COLUMNS = ["trial_id", "time", "cpu_percent", "rss_mb", "gpu_util", "gpu_mem_mb"]
# (trial_id, time, cpu_percent, rss_mb, gpu_util, gpu_mem_mb); the GPU's None where NVML read no device.
Sample = tuple[int, float, float, float, float | None, float | None]

TABLE = """
CREATE TABLE utilization (
    seq INTEGER PRIMARY KEY,       -- arrival order: the REST API's cursor
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id INTEGER NOT NULL,
    time REAL NOT NULL,            -- when it was sampled (Unix time, on the worker)
    cpu_percent REAL NOT NULL,     -- of one core, over the second before
    rss_mb REAL NOT NULL,          -- the worker process's resident memory
    gpu_util REAL,                 -- percent, the mean over the trial's GPUs (NULL: no GPU NVML could read)
    gpu_mem_mb REAL                -- this process's memory on them
);
CREATE INDEX utilization_by_experiment ON utilization (experiment_id, seq)"""


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


class UtilizationColumns:
    """One experiment's samples in arrival order, a typed array per column (NaN for a GPU value not read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # appended on Dask's IO thread, read on the kernel's
        self.trial_id = array("q")
        self.time, self.cpu_percent, self.rss_mb = array("d"), array("d"), array("d")
        self.gpu_util, self.gpu_mem_mb = array("d"), array("d")
        # Each trial's newest sample, by index: the live views read it at every redraw (5 a second), so one
        # dictionary look-up per running trial, not a scan of every sample.
        self._newest: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.trial_id)

    def extend(self, samples: Iterable[Sample]) -> None:
        nan = math.nan
        with self._lock:
            for trial_id, at, cpu, rss, util, mem in samples:
                self.trial_id.append(trial_id)
                self.time.append(at)
                self.cpu_percent.append(cpu)
                self.rss_mb.append(rss)
                self.gpu_util.append(nan if util is None else util)
                self.gpu_mem_mb.append(nan if mem is None else mem)
                self._newest[trial_id] = len(self.trial_id) - 1

    def columns(self, trial_id: int | None = None) -> dict[str, list]:
        """Each column as a list (copied under the lock), of every trial's samples or ``trial_id``'s."""
        with self._lock:
            out = {name: getattr(self, name).tolist() for name in COLUMNS}
        if trial_id is not None:
            kept = [i for i, t in enumerate(out["trial_id"]) if t == trial_id]
            out = {name: [values[i] for i in kept] for name, values in out.items()}
        return out

    def latest(self, trial_ids: Iterable[int]) -> dict[int, Sample]:
        """The newest sample of each of ``trial_ids`` that has one (the GPU's NaN as None), copying nothing else."""
        out: dict[int, Sample] = {}
        with self._lock:
            for trial_id in trial_ids:
                i = self._newest.get(trial_id)
                if i is not None:
                    out[trial_id] = (
                        trial_id,
                        self.time[i],
                        self.cpu_percent[i],
                        self.rss_mb[i],
                        _none_if_nan(self.gpu_util[i]),
                        _none_if_nan(self.gpu_mem_mb[i]),
                    )
        return out

    def samples(self, trial_id: int | None = None) -> list[Sample]:
        """The samples as tuples, the GPU's NaN as None."""
        c = self.columns(trial_id)
        return [
            (t, at, cpu, rss, _none_if_nan(util), _none_if_nan(mem))
            for t, at, cpu, rss, util, mem in zip(*(c[name] for name in COLUMNS), strict=True)
        ]


def insert(conn: sqlite3.Connection, experiment_id: str, samples: list[Sample]) -> None:
    """(Inside a write transaction.) Append samples."""
    conn.executemany(
        "INSERT INTO utilization (experiment_id, trial_id, time, cpu_percent, rss_mb, gpu_util, gpu_mem_mb) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(experiment_id, *sample) for sample in samples],
    )


def samples_after(
    conn: sqlite3.Connection, experiment_id: str, since: int = 0, trial_id: int | None = None, limit: int = -1
) -> list[tuple[int, Sample]]:
    """An experiment's samples (or one trial's) after cursor ``since``, in arrival order, at most ``limit`` (-1:
    all): (cursor, sample)."""
    rows = conn.execute(
        "SELECT seq, trial_id, time, cpu_percent, rss_mb, gpu_util, gpu_mem_mb FROM utilization "
        "WHERE experiment_id = ?1 AND seq > ?2 AND (?3 IS NULL OR trial_id = ?3) ORDER BY seq LIMIT ?4",
        (experiment_id, since, trial_id, limit),
    )
    return [(seq, tuple(sample)) for seq, *sample in rows]


def migrate_from_schema_3(conn: sqlite3.Connection) -> None:
    """(Inside the migration's transaction.) A store written before utilisation was sampled: an empty table."""
    for statement in TABLE.split(";"):
        conn.execute(statement)
