"""The embedded cluster's LocalCluster, less two faults of distributed 2026.8 that only show once a worker is
restarted (a data-parallel rank stuck in a collective is, trials/_launcher.py).

A restarted worker came back daemonic: the nanny takes the worker process's daemon flag from the global dask
config when it starts each process, not from the config it was made with, and the embedded cluster sets
``distributed.worker.daemon: False`` only while it starts (a daemonic worker cannot run DataLoader(num_workers>0)).
Its nannies here start every worker process with that setting.

And when a worker leaves the scheduler, SpecCluster checks ``distributed.deploy.lost-worker-timeout`` (15 s) later
whether a worker of that name is back, and if not, closes its nanny for good. The check does not ask whether the
worker is on its way back: a worker restarted twice within those 15 s (two data-parallel runs in a row whose
stuck ranks were restarted, trials/_launcher.py) is missing at that moment only because its second restart is
under way, and the first restart's stale check closed its nanny: the cluster stayed a worker short, and the
next data-parallel run could not be placed. Here a worker whose nanny is still running is not lost: the nanny
brings its worker process back whenever that process ends (a nanny that gave up has closed itself).

And its workers heartbeat every HEARTBEAT_INTERVAL instead of every 0.5 s (see EmbeddedScheduler).

A script that starts it from its top-level code without ``if __name__ == "__main__":`` is refused first, with the
fix (``unguarded_script_call``): each worker process would import the script again, start the embedded cluster
again there, and end in "EmbeddedNanny failed to start" after a screen of multiprocessing's tracebacks.
"""

from __future__ import annotations

import ast
import asyncio
import os
import sys
from collections.abc import Sequence
from types import FrameType

import dask
from dask.utils import parse_timedelta
from distributed import LocalCluster, Nanny, Scheduler
from distributed.core import Status
from distributed.deploy.cluster import Cluster

from ..errors import ClusterError
from ._gpu_slots import GpuSlot, gpu_layout, slot_name, wait_for_layout


class EmbeddedNanny(Nanny):
    async def instantiate(self):
        # Set for the moment the process starts; the setting is global, but only nannies read it.
        with dask.config.set({"distributed.worker.daemon": False}):
            return await super().instantiate()


# Dask's scheduler asks each worker of a small cluster for a heartbeat every 0.5 s (distributed's
# heartbeat_interval(), not a config setting). Each costs ~2.7 ms of CPU between the worker and the scheduler in
# the kernel, on the cores the trials run on: half of an idle embedded cluster's CPU (measured: 20 s idle, kernel +
# 2 workers 0.36 CPU-s, 0.14 at 2 s). The heartbeat carries the dashboard's worker metrics and the worker TTL
# check; neither needs 0.5 s here, and a worker process that dies is noticed by its nanny and its connection, not
# by a missing heartbeat.
HEARTBEAT_INTERVAL = 2.0


class EmbeddedScheduler(Scheduler):
    def heartbeat_worker(self, **kwargs):
        response = super().heartbeat_worker(**kwargs)
        if "heartbeat-interval" in response:
            response["heartbeat-interval"] = max(response["heartbeat-interval"], HEARTBEAT_INTERVAL)
        return response


class EmbeddedLocalCluster(LocalCluster):
    """``gpus``: the CUDA_VISIBLE_DEVICES value of each GPU (cluster/_embedded.py, local_gpus()), ``gpu_types``
    their types (None: not known). Each GPU gets a worker of its own in place of one of the CPU workers: it sees
    that device alone (as dask-cuda's workers do) and declares the Dask resource ``GPU=1`` (and ``GPU-<type>``),
    so ``gpus_per_trial=1`` trials run one at a time per GPU and data-parallel ranks with ``gpus_per_worker=1``
    get a device each. ``fit_gpu_share`` lays the GPU workers out again for another ``gpus_per_trial``
    (cluster/_gpu_slots.py)."""

    def __init__(
        self, *, gpus: Sequence[str] = (), gpu_types: Sequence[str | None] | None = None, **options
    ) -> None:
        self.gpus = list(gpus)
        self.gpu_types: list[str | None] = list(gpu_types or [None] * len(self.gpus))
        self.gpu_slots: list[GpuSlot] = []
        unguarded = unguarded_script_call()
        if unguarded is not None:
            path, line = unguarded
            raise ClusterError(
                f"{path}, line {line}, starts an experiment from the script's top-level code: the embedded Dask "
                "cluster starts its workers as new processes, which import the script again and would start "
                'it again. Put the code that runs the experiment under `if __name__ == "__main__":` (as '
                'Python\'s multiprocessing asks), or run it on a cluster started elsewhere (cluster="tcp://...").'
            )
        super().__init__(worker_class=EmbeddedNanny, **options)

    async def _start(self):
        # LocalCluster names its scheduler class in a spec it makes itself: swap it before the scheduler starts.
        self.scheduler_spec["cls"] = EmbeddedScheduler
        replaced = sorted(self.worker_spec)[: len(self.gpus)]
        if replaced:
            self._gpu_template = self.worker_spec[replaced[0]]
            for name in replaced:
                del self.worker_spec[name]
            self._lay_out(gpu_layout(self.gpus, self.gpu_types, None))
        await super()._start()

    def fit_gpu_share(self, share: float | None, client) -> None:
        """Lay the GPU workers out for trials of ``share`` GPUs each, unless they already are, or trials of any
        run are running or queued (they would be lost): then they stay, and placement says what is missing."""
        if not self.gpus:
            return
        layout = gpu_layout(self.gpus, self.gpu_types, share)
        if layout == self.gpu_slots or client.run_on_scheduler(_has_tasks):
            return
        for name in self._gpu_names():
            del self.worker_spec[name]
        self._lay_out(layout)
        self.sync(self._correct_state_internal)
        wait_for_layout(client, set(self.worker_spec))

    def _lay_out(self, layout: list[GpuSlot]) -> None:
        spec = self._gpu_template
        options = {**spec["options"], "nthreads": 1}
        on_device: dict[tuple[str, ...], int] = {}
        for slot in layout:
            index = on_device[slot.devices] = on_device.get(slot.devices, -1) + 1
            env = {**(options.get("env") or {}), **slot.env}
            resources = {**(options.get("resources") or {}), **slot.resources}
            worker = {**spec, "options": {**options, "env": env, "resources": resources}}
            self.worker_spec[slot_name(index, slot)] = worker
        self.gpu_slots = layout

    def _gpu_names(self) -> list:
        return [name for name in self.worker_spec if isinstance(name, str) and name.startswith("gpu")]

    def _update_worker_status(self, op, msg):
        if op != "remove":
            return super()._update_worker_status(op, msg)
        name = self.scheduler_info["workers"][msg]["name"]

        def close_if_lost() -> None:
            nanny = self.workers.get(name)
            back = any(info["name"] == name for info in self.scheduler_info["workers"].values())
            if nanny is not None and not back and nanny.status is not Status.running:
                self._futures.add(asyncio.ensure_future(nanny.close()))
                del self.workers[name]

        delay = parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
        asyncio.get_running_loop().call_later(delay, close_if_lost)
        # What SpecCluster's own version does next (it would also schedule its check, which this replaces).
        Cluster._update_worker_status(self, op, msg)


def unguarded_script_call() -> tuple[str, int] | None:
    """Where the script being run calls us from its top-level code outside ``if __name__ == "__main__":`` (its
    path and line), or None: a notebook, ``python -c``, ``python -m package``, a guarded call, or forked
    workers, which import nothing again. Mirrors what multiprocessing's spawn imports again in each process."""
    if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
        return None
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and (spec.name == "__main__" or spec.name.endswith(".__main__")):
        return (
            None  # a package's __main__ is not imported again (multiprocessing.spawn._fixup_main_from_name)
        )
    path = getattr(main, "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>" and _same_file(code.co_filename, path):
            line = frame.f_lineno
            return None if _guarded(path, line) else (path, line)
        frame = frame.f_back
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _guarded(path: str, line: int) -> bool:
    """Whether ``line`` of the script at ``path`` is inside an ``if __name__ == "__main__":`` block."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return True  # cannot tell: let it start, as before
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test):
            if any(child.lineno <= line <= (child.end_lineno or child.lineno) for child in node.body):
                return True
    return False


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    return names and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _has_tasks(dask_scheduler=None) -> bool:
    """On the scheduler: whether any task is running or waiting to."""
    return any(
        ts.state in ("processing", "queued", "no-worker", "waiting") for ts in dask_scheduler.tasks.values()
    )
