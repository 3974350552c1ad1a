"""One rank of a data-parallel trial: join the process group, run the training function, leave.

``DataParallelTrial`` is what the workers run instead of the bare function. The rendezvous has its own timeout
(Dask does not start a job's ranks together; a rank whose worker is busy never comes), separate from the
collectives' timeout (a slow step is not a lost rank). A rank that fails leaves the process group at once, so
that its worker can run the next job; peers blocked in a collective are the launcher's to end (gloo wakes them
only once this rank's process group is freed and its sockets close: see trials/_gang.py, GangTrial.stragglers).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from ..errors import PlacementError, RendezvousError, TrialPruned
from ..protocol import RankInfo
from ..trials import current_trial, release_gpu_memory
from ._context import run

GLOO_SETTLE = 0.2


class DataParallelTrial:
    def __init__(
        self,
        fn: Callable,
        *,
        backend: str | None,
        gpus_per_worker: float,
        threads: int | None,
        rendezvous_timeout: float,
        strategy: str | None = None,
        mixed_precision: str | None = None,
    ) -> None:
        self.fn = fn
        self.backend = backend
        self.gpus_per_worker = gpus_per_worker
        self.threads = threads
        self.rendezvous_timeout = rendezvous_timeout
        self.strategy = strategy  # prepare()'s defaults in this run
        self.mixed_precision = mixed_precision
        functools.update_wrapper(self, fn)

    def __call__(self, **kwargs: Any) -> Any:
        import torch

        ctx = current_trial()
        assert ctx is not None and ctx.rank_info is not None  # it runs as a data-parallel trial's rank
        info = ctx.rank_info
        threads = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)  # the nanny sets OMP_NUM_THREADS=1: choose on purpose
        try:
            return self._run(ctx, info, kwargs)
        finally:
            torch.set_num_threads(threads)  # the worker's later tasks get its own setting back

    def _run(self, ctx, info: RankInfo, kwargs: dict) -> Any:
        import torch
        import torch.distributed as dist
        from distributed import get_worker

        use_gpu = self.gpus_per_worker > 0 or self.backend == "nccl"
        if use_gpu and not torch.cuda.is_available():
            raise PlacementError(
                f"rank {info.rank}: asked for GPUs, but torch sees no CUDA device on worker "
                f"{get_worker().address}"
            )
        backend = self.backend or ("nccl" if use_gpu else "gloo")
        device = torch.device("cuda", _gpu_index(info.rank)) if use_gpu else torch.device("cpu")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        _pin_socket_interface()
        store = ctx.rendezvous = self._join(info)  # an elastic job's ranks agree to regroup there
        if backend == "nccl":
            _refuse_shared_gpus(store, info, device)
        dist.init_process_group(backend, store=store, rank=info.rank, world_size=info.world)
        run.device = device
        run.strategy, run.mixed_precision = self.strategy, self.mixed_precision
        try:
            # Every rank has its connections before any goes on: gloo's init is no barrier, so a rank whose function
            # made no collective could end and close its sockets while a slower peer was still connecting to it
            # ("connectFullMesh failed ... Connection closed by peer", seen on a loaded machine).
            if device.type == "cuda":
                dist.barrier(device_ids=[device.index])
            else:
                dist.barrier()
            result = self.fn(**kwargs)
        except BaseException as exc:
            if not isinstance(exc, TrialPruned):
                # Before the clean-up below, which may wake the peers' collectives and make them fail too.
                ctx.failed_at = time.time()
            # Leave the default process group (the next job on this worker makes its own) and let go of the
            # failed function's frames, which the traceback would keep alive with the model and its gradients.
            dist.destroy_process_group()
            _let_gloo_settle()
            traceback.clear_frames(exc.__traceback__)
            _let_gloo_settle()
            raise
        finally:
            run.device = run.strategy = run.mixed_precision = run.scaler = run.final_batch_of = None
            if device.type == "cuda":
                release_gpu_memory(failed=sys.exc_info()[0] is not None)
        dist.destroy_process_group()
        _let_gloo_settle()
        return result

    def _join(self, info: RankInfo):
        import torch.distributed as dist

        try:
            return dist.TCPStore(
                info.host,
                info.port,
                info.world,
                is_master=info.rank == 0,
                timeout=datetime.timedelta(seconds=self.rendezvous_timeout),
                wait_for_workers=True,
            )
        except (RuntimeError, dist.DistError) as exc:
            where = f"{info.host}:{info.port}"
            if info.rank and isinstance(exc, dist.DistNetworkError):  # it never got through to rank 0's store
                raise RendezvousError(
                    f"rank {info.rank} of {info.world} cannot reach rank 0 at {where} (tried for "
                    f"{self.rendezvous_timeout:g}s): the workers must reach each other on the address of "
                    "rank 0's worker. A firewall between the hosts, or a worker whose Dask address is not "
                    f"routable from the others, blocks it ({exc})"
                ) from None
            raise RendezvousError(
                f"rank {info.rank} of {info.world}: not every rank joined within "
                f"{self.rendezvous_timeout:g}s at {where}. Either the others never started (Dask does not "
                f"start a job's ranks together: the job needs {info.world} workers free at the same time), "
                f"or they cannot reach {where} (a firewall between the hosts, or a worker address the "
                f"others cannot route to) ({exc})"
            ) from None


def _refuse_shared_gpus(store, info: RankInfo, device) -> None:
    """NCCL runs one rank per GPU: two ranks on one device end in its "Duplicate GPU detected" error at the first
    collective. Each rank says which device it has through the rendezvous store, and every rank refuses at once,
    naming the ranks and the way out, before the process group is made."""
    import torch

    store.set(f"jupyter_dist/gpu/{info.rank}", str(torch.cuda.get_device_properties(device).uuid))
    held = [store.get(f"jupyter_dist/gpu/{rank}").decode() for rank in range(info.world)]
    message = shared_gpus_message(held)
    if message:
        raise PlacementError(message)


def shared_gpus_message(held: list[str]) -> str | None:
    """What to say when ranks share a GPU (``held``: each rank's device UUID, by rank), or None."""
    ranks: dict[str, list[int]] = {}
    for rank, device in enumerate(held):
        ranks.setdefault(device, []).append(rank)
    shared = [r for r in ranks.values() if len(r) > 1]
    if not shared:
        return None
    listed = "; ".join("ranks " + ", ".join(map(str, r)) + " share one GPU" for r in shared)
    return (
        f"backend='nccl' needs a GPU of its own for each rank: {listed}. Give each rank its own device (one "
        "worker per GPU declaring GPU=1, as the embedded cluster and dask-cuda do), or pass backend='gloo', "
        "which all-reduces CUDA tensors too (through host memory)"
    )


SOCKET_IFNAME_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def _pin_socket_interface() -> None:
    """Tell gloo and NCCL to use the network interface that carries this worker's own Dask address.

    Left to themselves they advertise the address the machine's hostname resolves to, which is often 127.0.0.1
    (/etc/hosts): a rank on another host then cannot connect ("Gloo connectFullMesh failed ... remote=[127.0.0.1]").
    The worker's Dask address is one its peers already reach. A GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME set in
    the worker's environment wins, as it does for torchrun.
    """
    from distributed import get_worker
    from distributed.comm import get_address_host

    interface = interface_of(get_address_host(get_worker().address))
    if interface is None:
        return  # an address no local interface has (behind NAT): leave the choice to gloo and NCCL
    for variable in SOCKET_IFNAME_VARIABLES:
        os.environ.setdefault(variable, interface)


def interface_of(host: str) -> str | None:
    """The name of this machine's network interface that has ``host``'s address (None if none has)."""
    import ipaddress
    import socket

    import psutil

    try:
        address = ipaddress.ip_address(socket.getaddrinfo(host, None)[0][4][0])
    except (OSError, ValueError):
        return None
    for name, addresses in psutil.net_if_addrs().items():
        for entry in addresses:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                with contextlib.suppress(ValueError):
                    if ipaddress.ip_address(entry.address.split("%")[0]) == address:
                        return name
    return None


def _gpu_index(rank: int) -> int:
    """The rank's GPU. A worker that sees one GPU (dask-cuda sets CUDA_VISIBLE_DEVICES per worker) uses it;
    workers that each see all of a host's GPUs take one apiece by rank (ranks on a host are consecutive: they
    are placed in the order of the workers' addresses)."""
    import torch

    count = torch.cuda.device_count()
    return rank % count if count > 1 else torch.cuda.current_device()


def _let_gloo_settle() -> None:
    """gloo's worker threads drop finished work items after the fact, which needs the GIL. Were the process group
    freed meanwhile, its destructor would join them while holding the GIL: a deadlock that froze the whole
    worker (seen when a rank raised). A moment without the GIL lets them finish first."""
    time.sleep(GLOO_SETTLE)
