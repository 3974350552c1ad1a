"""One run's trial tasks on Dask: the training function shipped once, each trial's task built and submitted, and
the futures of the running trials kept until Dask may drop them.

The Dask launcher (trials/_launcher.py) decides what to submit and when a trial has ended; this is how it reaches
the cluster. A trial's futures are released only once its task has ended (``lingering``): releasing a running
task would cancel it noisily on its worker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import cloudpickle

from ..protocol import GPU, CheckpointPlan, RankInfo, TrialTask, dask_request
from ._by_reference import Shipment, scatter_threshold
from ._first_task import load_on_a_worker
from ._gpu_types import TypeRotation, of_type
from ._runner import run_trial
from ._seams import TrialSpec

# A pickled function this large is dropped from the workers' memory when its run ends (trials/_by_reference.py).
LARGE_FUNCTION = 2**20

# (scheduler address, hash of the pickled function) pairs whose function loaded on that cluster's workers.
_loadable: set[tuple[str, str]] = set()


class TrialTasks:
    """The tasks of experiment ``exp_id``'s trials of ``fn`` on ``client``'s cluster, each asking for
    ``resources``; the other arguments are what every trial task carries (protocol.TrialTask)."""

    def __init__(
        self,
        client,
        fn: Callable,
        exp_id: str,
        *,
        topic: str,
        resources: dict[str, float] | None,
        cpus: int | None,
        checkpoints: CheckpointPlan | None,
        report_wait: float,
        elastic: bool,
        gpu_types: TypeRotation | None = None,
    ) -> None:
        self.client = client
        self.gpu_types = gpu_types  # several GPU types asked for: each trial's, in turn
        self.exp_id = exp_id
        self.topic = topic
        self.resources = resources
        self.cpus = cpus
        self.checkpoints = checkpoints
        self.report_wait = report_wait
        self.elastic = elastic
        # What this run puts on the cluster once (with_parameters' objects, a large function), released at its end.
        self.shipment = Shipment(client)
        with self.shipment.shipping():
            blob = cloudpickle.dumps(fn)
        self.fn_key = (exp_id, hashlib.sha1(blob).hexdigest())  # how workers keep it, unpickled
        # Sent with every task, or (above the threshold) only its key: each worker then fetches it once.
        self.fn_size = len(blob)
        self.fn_blob: bytes | str = blob if len(blob) <= scatter_threshold() else self.shipment.put(blob)
        self._released = False
        # The tasks of our running trials, by rank (one for a single-task trial): ours to cancel, re-submit and
        # release; a task ending that is not among them any more (re-submitted) is ignored.
        self.running: dict[int, list] = {}
        # Futures of trials whose outcome has arrived but whose task has not ended yet: released once it has.
        self.lingering: list = []

    def check_function(self, timeout: float) -> None:
        """Load the training function on a worker once, so an unimportable module fails fast and clearly.

        A function already loaded on this cluster (same bytes) is not probed again: re-running a cell costs no
        extra round trip.
        """
        probe_key = (self.client.scheduler.address, self.fn_key[1])
        if probe_key in _loadable:
            return
        load_on_a_worker(self.client, self.fn_key, self.fn_blob, f"jupyter_dist-probe-{self.exp_id}", timeout)
        _loadable.add(probe_key)

    def release(self) -> None:
        """Let go of what the run put on the cluster (its data leaves it); safe to call again. A large function
        is forgotten on the workers too, even when it travelled with every task (the threshold turned off): each
        worker would otherwise keep it, data and all, for KEPT_EXPERIMENTS runs."""
        if self._released:
            return
        self._released = True
        large = bool(self.shipment.futures) or self.fn_size > LARGE_FUNCTION
        self.shipment.release(self.fn_key if large else None)

    # --- submitting -----------------------------------------------------------------------------------------
    def task(self, spec: TrialSpec, rank: RankInfo | None) -> TrialTask:
        """What runs ``spec`` on a worker: the whole trial, or (``rank``) one rank of a data-parallel one."""
        return TrialTask(
            self.fn_key,
            self.fn_blob,
            self.exp_id,
            spec.trial_id,
            spec.params,
            self.topic,
            rank,
            gpus=0 if rank is not None else (self.resources or {}).get(GPU, 0),
            cpus=None if rank is not None else self.cpus,
            checkpoint_dir=self._checkpoint_dir(spec),
            keep_checkpoints=self.checkpoints.keep if self.checkpoints else None,
            report_wait=self.report_wait,
            until_step=spec.until_step,
            elastic=self.elastic and rank is not None,
            seed=spec.seed,
        )

    def _checkpoint_dir(self, spec: TrialSpec) -> str | None:
        if self.checkpoints is None:
            return None
        return self.checkpoints.trial_directory(spec.trial_id if spec.continues is None else spec.continues)

    def submit(self, task: TrialTask, key: str, **placement: Any):
        (future,) = self.submit_all([task], [key], **placement)
        return future

    def submit_all(self, tasks: list[TrialTask], keys: list[str], **placement: Any) -> list:
        """Submit trial tasks placed alike, in one message to the scheduler; the trials' resources asked for."""
        keys = [f"jupyter_dist-{self.exp_id}-{key}" for key in keys]
        if self.gpu_types is not None:
            return self._submit_by_type(tasks, keys, placement)
        if self.resources:
            placement["resources"] = dask_request(self.resources)
        if len(tasks) == 1:
            return [self.client.submit(run_trial, tasks[0], key=keys[0], pure=False, **placement)]
        return self.client.map(run_trial, tasks, key=keys, pure=False, **placement)

    def _submit_by_type(self, tasks: list[TrialTask], keys: list[str], placement: dict[str, Any]) -> list:
        """Each task asking for the next of several GPU types (trials/_gpu_types.py), one submission per type."""
        assert self.gpu_types is not None
        by_type: dict[str, list[int]] = {}
        for i in range(len(tasks)):
            by_type.setdefault(self.gpu_types.next(), []).append(i)
        futures: list = [None] * len(tasks)
        for gpu_type, indices in by_type.items():
            submitted = self.client.map(
                run_trial,
                [tasks[i] for i in indices],
                key=[keys[i] for i in indices],
                pure=False,
                **placement,
                resources=dask_request(of_type(self.resources, gpu_type)),
            )
            for i, future in zip(indices, submitted, strict=True):
                futures[i] = future
        return futures

    # --- letting go ---------------------------------------------------------------------------------------
    def retire(self, trial_id: int) -> None:
        """The trial's tasks are done with (its outcome is in, or its group regrouped): released once ended."""
        self.lingering.extend(self.running.pop(trial_id, []))

    def cancel(self, trial_id: int, ranks: list[int] | None) -> None:
        """Cancel the trial's tasks of these ranks (None: all of them)."""
        tasks = self.running.get(trial_id, [])
        for rank in range(len(tasks)) if ranks is None else ranks:
            tasks[rank].cancel()

    def release_ended(self) -> None:
        """Let Dask drop the results of the lingering tasks that have ended."""
        ended: list = []
        still: list = []
        for future in self.lingering:
            (ended if future.done() else still).append(future)
        self.lingering = still
        if ended:
            # Released on the client's IO loop, all in one callback: Future.release() from this thread wakes
            # the loop once per future (a self-pipe write each, ~0.1 ms of the kernel's CPU).
            self.client.loop.add_callback(_release_all, ended)


def _release_all(futures: list) -> None:
    """On the client's IO loop: let Dask drop these tasks' results (from there each release is cheap)."""
    for future in futures:
        future.release()
