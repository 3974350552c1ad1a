"""What each running trial uses, sampled about once a second on its worker and sent with its reports.

One daemon thread per worker process (started by the first trial that runs there) wakes every PERIOD while trials
run and sends, for each, one utilisation sample through its experiment's outbox, where it waits for company up
to SAMPLE_WAIT (the trial's next reports, or the samples that follow it). A sample says:

- ``cpu_percent``: CPU time over wall time since the trial's last sample, in percent of one core. A trial alone in
  its worker process (the embedded cluster's layout: one thread per worker) is charged the whole process's CPU
  but this thread's: the threads it started (torch's intra-op pool, a data loader's) count, and so does the
  worker's own event loop (heartbeats: a fraction of a percent when idle). Trials sharing a process are each
  charged their own thread only: threads they started belong to no one trial and are left out.
- ``rss_mb``: the process's resident memory, shared by every trial of that process.
- ``gpu_util`` and ``gpu_mem_mb``: where NVML is there (``pip install 'jupyter_dist[gpu]'``: nvidia-ml-py) and the
  trial holds devices (``gpus_per_trial=``): their utilisation (the mean, in percent; device-wide, whoever
  uses it) and the memory this process holds on them (summed). None otherwise.

A trial's first sample comes after at least MIN_INTERVAL of its run, so a trial shorter than about a second may
have none. Sampling never fails a trial: what goes wrong is logged once and the sampler goes on (or, for NVML,
leaves the GPU columns empty). A data-parallel trial is sampled on its rank 0 only. Dask config
``jupyter_dist.utilization: false`` turns sampling off, read on the worker when each trial starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..protocol import encode_utilization

if TYPE_CHECKING:
    from ._trial_context import TrialContext

__all__ = ["MIN_INTERVAL", "PERIOD", "sampled"]

logger = logging.getLogger(__name__)

# About once a second: bench_utilization measured a tick at ~0.1 ms of one thread's CPU with two trials, so
# ~0.01% of a core per worker; the cost to the trial itself is within the benchmark's noise.
PERIOD = 1.0
# A trial this briefly registered at a tick waits for the next: a CPU share over a few ms is mostly noise.
MIN_INTERVAL = 0.2
# How long a sample waits for company in the outbox. A trial that reports takes its samples along with its
# reports; a silent one sends its samples in one event every SAMPLE_WAIT. Sent on their own, one event a second
# cost a trial ~1% on 2 busy cores (bench_utilization: each event wakes the outbox's flusher thread and the
# worker's event loop, and a GIL-bound trial waits for each); sampling alone, ~0.5%.
SAMPLE_WAIT = 3.0
MB = float(1 << 20)

# pthread CPU clocks read another thread's CPU time for ~1 us (Linux, most Unixes); where there are none (macOS,
# Windows), psutil's per-thread times (a /proc or task_info read of every thread) stand in.
_thread_clock = getattr(time, "pthread_getcpuclockid", None)


class _Running:
    """One trial attempt being sampled: its context, its thread, and its CPU clocks at its last sample."""

    __slots__ = ("ctx", "native_id", "clock", "wall", "thread_cpu", "process_cpu")

    def __init__(self, ctx: TrialContext, process_cpu: float) -> None:
        self.ctx = ctx
        self.native_id = threading.get_native_id()
        self.clock = _thread_clock(threading.get_ident()) if _thread_clock else None
        self.wall = time.monotonic()
        self.thread_cpu = time.thread_time()
        self.process_cpu = process_cpu


class _Sampler:
    """The process's sampler thread and the trials it samples."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._running: dict[int, _Running] = {}
        self._thread: threading.Thread | None = None
        self._own_cpu = 0.0  # this thread's CPU so far, left out of the process's
        self._process: Any = None  # psutil.Process, made on the sampler's thread
        self._gpus = _Gpus()
        self._failed = False

    def add(self, ctx: TrialContext) -> _Running:
        with self._lock:
            entry = _Running(ctx, time.process_time() - self._own_cpu)
            self._running[id(entry)] = entry
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="jupyter_dist-utilization", daemon=True
                )
                self._thread.start()
            self._lock.notify()
        return entry

    def remove(self, entry: _Running) -> None:
        # Under the lock: a tick reads the thread's CPU clock only while the thread is still registered, so
        # never the clock of a thread that has ended.
        with self._lock:
            self._running.pop(id(entry), None)

    def _run(self) -> None:
        import psutil

        self._process = psutil.Process()
        while True:
            with self._lock:
                while not self._running:
                    self._lock.wait()
            time.sleep(PERIOD)
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - sampling must never end a trial, nor this thread
                if not self._failed:
                    self._failed = True
                    logger.exception("jupyter_dist: sampling the trials' utilisation failed")

    def _tick(self) -> None:
        """Sample every trial registered long enough, and send each its sample. Sent under the lock: a trial that
        ends meanwhile waits in remove() until its sample is in the outbox, so the sample leaves with its outcome
        (sent once remove() returns) rather than up to SAMPLE_WAIT after the run may have stopped listening."""
        with self._lock:
            now, at = time.monotonic(), time.time()
            process_cpu = time.process_time() - self._own_cpu
            entries = [e for e in self._running.values() if now - e.wall >= MIN_INTERVAL]
            alone = len(self._running) == 1
            rss_mb = self._process.memory_info().rss / MB if entries else 0.0
            threads = None if _thread_clock or not entries else _thread_times(self._process)
            for e in entries:
                thread_cpu = (
                    time.clock_gettime(e.clock)
                    if e.clock is not None
                    else (threads or {}).get(e.native_id, 0.0)
                )
                used = process_cpu - e.process_cpu if alone else thread_cpu - e.thread_cpu
                cpu = max(0.0, 100.0 * used / (now - e.wall))
                e.wall, e.thread_cpu, e.process_cpu = now, thread_cpu, process_cpu
                util, mem = self._gpus.sample(e.ctx.devices)
                e.ctx.send(
                    encode_utilization(e.ctx.trial_id, e.ctx.attempt, at, cpu, rss_mb, util, mem), SAMPLE_WAIT
                )
            self._own_cpu = time.thread_time()
            self._gpus.forget_sampled()


def _thread_times(process: Any) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in process.threads()}


class _Gpus:
    """NVML, when nvidia-ml-py is installed and a driver answers; each device read once per tick."""

    def __init__(self) -> None:
        self._nvml: Any = None  # the pynvml module once initialised; False: not there
        self._handles: dict[int, Any] = {}
        self._sampled: dict[int, tuple[float | None, float | None]] = {}

    def sample(self, devices: list[int]) -> tuple[float | None, float | None]:
        """The mean utilisation of ``devices`` (the worker process's CUDA indices) and this process's memory on
        them; None, None when NVML reads none of them."""
        if not devices or self._nvml is False:
            return None, None
        if self._nvml is None:
            self._nvml = _nvml()
        if self._nvml is False:
            return None, None
        utils, mems = [], []
        for device in devices:
            if device not in self._sampled:
                self._sampled[device] = self._read(device)
            util, mem = self._sampled[device]
            if util is not None:
                utils.append(util)
            if mem is not None:
                mems.append(mem)
        return (sum(utils) / len(utils) if utils else None), (sum(mems) if mems else None)

    def forget_sampled(self) -> None:
        self._sampled.clear()

    def _read(self, device: int) -> tuple[float | None, float | None]:
        nvml = self._nvml
        try:
            handle = self._handles.get(device) or self._handles.setdefault(device, _handle(nvml, device))
        except Exception:  # noqa: BLE001 - no such device for NVML (an index past CUDA_VISIBLE_DEVICES)
            return None, None
        util = mem = None
        with contextlib.suppress(nvml.NVMLError):  # a MIG slice has no utilisation of its own
            util = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        with contextlib.suppress(nvml.NVMLError):
            pid = os.getpid()
            # A process in a container sees the host's pids here: then none is ours, and the memory stays None.
            used = [
                p.usedGpuMemory
                for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
                if p.pid == pid and p.usedGpuMemory is not None
            ]
            mem = sum(used) / MB if used else None
        return util, mem


def _nvml() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - not installed, no driver, no device: no GPU columns
        return False
    return pynvml


def _handle(nvml: Any, device: int) -> Any:
    """NVML's handle of the process's CUDA device ``device``: CUDA_VISIBLE_DEVICES names the devices the process
    sees (indices or UUIDs), in its order; without it, CUDA's index is taken as NVML's (the same order when
    CUDA_DEVICE_ORDER=PCI_BUS_ID, and on machines of one GPU model)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nvml.nvmlDeviceGetHandleByIndex(device)
    entry = [e.strip() for e in visible.split(",") if e.strip()][device]
    return (
        nvml.nvmlDeviceGetHandleByIndex(int(entry))
        if entry.isdigit()
        else nvml.nvmlDeviceGetHandleByUUID(entry)
    )


_sampler = _Sampler()


@contextlib.contextmanager
def sampled(ctx: TrialContext) -> Iterator[None]:
    """Sample the trial of ``ctx`` (running on the calling thread) while the block runs."""
    entry = None
    if not ctx.rank and _enabled():
        try:
            entry = _sampler.add(ctx)
        except Exception:  # noqa: BLE001 - a trial runs unsampled rather than not at all
            logger.exception("jupyter_dist: could not sample trial %s", ctx.trial_id)
    try:
        yield
    finally:
        if entry is not None:
            _sampler.remove(entry)


def _enabled() -> bool:
    import dask.config

    return bool(dask.config.get("jupyter_dist.utilization", True))
