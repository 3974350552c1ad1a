"""The functions several benchmarks run on the Dask workers, each written once. A worker cannot import this
module by name, so importing it registers it with ``cloudpickle.register_pickle_by_value``: each function travels
with its code in every task. Each keeps its imports inside (part of what a trial costs) and takes its sizes as
arguments.
"""

from __future__ import annotations

import sys

import cloudpickle

# The digits MLP (bench_pruning, bench_trial_speed): scikit-learn's bundled digits, a fixed split.
DIGITS_VALIDATION = 450  # of 1797 samples; the other 1347 train
DIGITS_BATCH = 32
# The compute-bound MLP (bench_ddp, bench_trial_speed, bench_network): 512 -> 1024 -> 1024 -> 10.
COMPUTE_INPUTS = 512
COMPUTE_WIDTH = 1024
COMPUTE_BATCH = 1024


# --- CPU-bound pure Python (bench_overhead, bench_utilization) -----------------------------------------------
def busy(n, x):
    """Sum n floats: CPU-bound pure Python that holds the GIL, as a Python training loop does."""
    s = 0.0
    step = 0.5 + x
    for i in range(n):
        s += step * i
    return {"s": s}


def busy_where(n, x):
    """``busy``, with the worker process that ran it and its thread's CPU seconds doing so (bench_utilization)."""
    import os
    import time

    cpu = time.thread_time()
    metrics = busy(n, x)
    return {**metrics, "pid": os.getpid(), "cpu_s": time.thread_time() - cpu}


# --- dispatch and streaming ---------------------------------------------------------------------------------
def noop(x):
    return x


def paced(seconds, rate):
    """0, 1, 2... for ``seconds``: as fast as the caller goes (rate 0), else ``rate`` a second."""
    import time

    n, start = 0, time.time()
    while (now := time.time()) < start + seconds:
        # catch-up pacing: the average rate holds even if a sleep overshoots
        due = start + n / rate if rate else now
        if now < due:
            time.sleep(due - now)
        yield n
        n += 1


def stream(seconds, rate, x):
    """Report as fast as possible (rate 0) or at ``rate`` reports/s; return how many were sent."""
    import jupyter_dist

    sent = 0
    for step in paced(seconds, rate):
        jupyter_dist.report(step=step, v=float(step))
        sent = step + 1
    return {"v": float(sent), "sent": sent}


def raw_stream(seconds, rate, topic, trial_id):
    """``stream``'s loop sending one Dask ``log_event`` per report instead: the baseline it is measured against."""
    import time

    from distributed import get_worker

    emit = get_worker().log_event
    sent = 0
    for n in paced(seconds, rate):
        emit(topic, {"k": "r", "s": n, "m": {"v": float(n)}, "t": trial_id, "a": "raw", "w": time.time()})
        sent = n + 1
    return sent


def sleep_and_report(x, seconds, rate):
    """A trial that sleeps ``seconds`` in all, reporting ``round(seconds * rate)`` times (at least once when
    ``rate`` > 0), evenly spaced, the last report at its end; ``rate`` 0 reports nothing. The CPU is left to the
    bookkeeping: what it measures is the runtime's cost per trial and per report. Returns ``{"v": sent, "sent":
    sent}``, so the objective is the count of reports the trial sent."""
    import time

    import jupyter_dist

    sent = max(1, round(seconds * rate)) if rate else 0
    start = time.monotonic()
    for step in range(sent):
        due = start + (step + 1) * seconds / sent  # on schedule, not drifting with each sleep's overshoot
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        jupyter_dist.report(step=step, v=x)
    if not sent:
        time.sleep(seconds)
    return {"v": float(sent), "sent": sent}


# --- a known function ----------------------------------------------------------------------------------------
# The 6-d Hartmann function (Dixon & Szegő), on [0, 1]^6: its minimum, -3.32237, at one point among several
# local minima; a standard test of samplers (Optuna's and Ray Tune's own examples use it).
HARTMANN_ALPHA = (1.0, 1.2, 3.0, 3.2)
HARTMANN_A = (
    (10, 3, 17, 3.5, 1.7, 8),
    (0.05, 10, 17, 0.1, 8, 14),
    (3, 3.5, 1.7, 10, 17, 8),
    (17, 8, 0.05, 10, 0.1, 14),
)
HARTMANN_P = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)


def hartmann6(x0, x1, x2, x3, x4, x5):
    """The 6-d Hartmann function at (x0..x5): minimise it (the minimum is -3.32237)."""
    import math

    x = (x0, x1, x2, x3, x4, x5)
    total = 0.0
    for alpha, a, p in zip(HARTMANN_ALPHA, HARTMANN_A, HARTMANN_P, strict=True):
        total -= alpha * math.exp(-sum(ai * (xi - pi) ** 2 for ai, xi, pi in zip(a, x, p, strict=True)))
    return {"y": total}


# --- the digits MLP -----------------------------------------------------------------------------------------
def warm_digits_imports():
    """Import what ``train_digits_mlp`` needs, so the first trial in a process does not pay for it."""
    import numpy  # noqa: F401
    import sklearn.datasets  # noqa: F401
    import torch

    import jupyter_dist  # noqa: F401  (report() is a no-op outside an experiment)

    torch.set_num_threads(1)
    return True


def train_digits_mlp(lr, width, momentum, weight_decay, epochs, batch=DIGITS_BATCH):
    """An MLP (64 -> width -> width -> 10) trained on digits with SGD (``lr``, ``momentum``, ``weight_decay``),
    ``batch`` samples a step, for ``epochs`` passes over the 1347 training samples, reporting ``val_acc`` after
    each: a small, launch-bound trial (a step well under 1 ms). Returns the last ``val_acc`` and ``body_s``, the
    seconds the function took."""
    import time

    import jupyter_dist

    t0 = time.perf_counter()
    data, model, opt, shuffle = _digits_setup(width, lr=lr, momentum=momentum, weight_decay=weight_decay)
    for epoch in range(epochs):
        acc = _digits_epoch(model, opt, data, shuffle, batch)
        jupyter_dist.report(step=epoch, val_acc=acc)
    return {"val_acc": acc, "body_s": time.perf_counter() - t0}


def _digits_setup(width, **sgd):
    """One torch thread; the digits split, the model (seeded), its SGD optimizer (``sgd``), the shuffling's
    generator."""
    import torch

    torch.set_num_threads(1)
    data = _digits_split()
    torch.manual_seed(0)
    model = mlp(64, width)
    return data, model, torch.optim.SGD(model.parameters(), **sgd), torch.Generator().manual_seed(0)


def _digits_split():
    """Digits as tensors, the fixed split: (x_train, y_train, x_val, y_val)."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.data.astype("float32") / 16.0
    y = digits.target.astype("int64")
    order = np.random.RandomState(0).permutation(len(x))
    val, train = order[:DIGITS_VALIDATION], order[DIGITS_VALIDATION:]
    return tuple(torch.from_numpy(a) for a in (x[train], y[train], x[val], y[val]))


def mlp(inputs, width, depth=2, outputs=10):
    """Linear(inputs, width), ReLU, ``depth`` - 1 x (Linear(width, width), ReLU), Linear(width, outputs)."""
    import torch

    layers = [torch.nn.Linear(inputs, width), torch.nn.ReLU()]
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, outputs))


def _digits_epoch(model, opt, data, shuffle, batch):
    """One pass over the training samples in ``shuffle``'s order; the validation accuracy after it."""
    import torch

    x_train, y_train, x_val, y_val = data
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    perm = torch.randperm(len(x_train), generator=shuffle)
    for i in range(0, len(x_train), batch):
        rows = perm[i : i + batch]
        opt.zero_grad()
        loss_fn(model(x_train[rows]), y_train[rows]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        return (model(x_val).argmax(1) == y_val).float().mean().item()


def train_digits_mlp_pbt(lr, momentum, epochs, width=64, batch=DIGITS_BATCH):
    """``train_digits_mlp`` as a population-based-training member trains it: it goes on from its checkpoint
    (``jupyter_dist.restore``) and saves one after every epoch, the model, the optimizer and the shuffling's
    generator. Reports ``val_acc`` after each epoch."""
    import jupyter_dist

    data, model, opt, shuffle = _digits_setup(width, lr=lr, momentum=momentum)
    state = {"model": model, "optimizer": opt, "shuffle": shuffle.get_state()}
    start = 0
    restored = jupyter_dist.restore(state)
    if restored is not None:  # the optimizer comes back with this member's lr and momentum (PBT's explore)
        start = restored.step + 1
        shuffle.set_state(restored.state["shuffle"])
    for epoch in range(start, epochs):
        acc = _digits_epoch(model, opt, data, shuffle, batch)
        jupyter_dist.report(step=epoch, val_acc=acc)
        state["shuffle"] = shuffle.get_state()
        jupyter_dist.checkpoint(epoch, state)
    return {"val_acc": acc}


# --- population-based training's toy problem ------------------------------------------------------------------
def pbt_toy(lr, max_steps=300, mid=50.0, tolerance=3.0, noise=0.5):
    """The toy problem of Ray Tune's PBT example, written afresh: ``accuracy`` grows fastest when ``lr`` follows a
    triangle wave of the accuracy itself (0.001 at 0, 0.01 at ``mid``, back to 0.001 at twice that), and falls
    when lr is more than ``tolerance`` times too large, so no fixed rate keeps climbing. One report and one
    checkpoint per step."""
    import random

    import jupyter_dist

    accuracy, start = 0.0, 0
    restored = jupyter_dist.restore()
    if restored is not None:
        accuracy, start = restored.state["accuracy"], restored.step + 1
    for step in range(start, max_steps):
        climbing = accuracy < mid
        best = 0.01 * accuracy / mid if climbing else 0.01 - 0.01 * (accuracy - mid) / mid
        best = min(0.01, max(0.001, best))
        ratio = max(lr, best) / min(lr, best)
        if ratio < tolerance:
            accuracy += random.random() / ratio
        elif lr > best:
            accuracy -= (ratio - tolerance) * random.random()
        accuracy = max(0.0, accuracy + random.gauss(0.0, noise))
        jupyter_dist.report(step=step, accuracy=accuracy, lr=lr)
        jupyter_dist.checkpoint(step, {"accuracy": accuracy})
    return {"accuracy": accuracy}


# --- the compute-bound MLP ----------------------------------------------------------------------------------
def compute_batch(batch=COMPUTE_BATCH):
    """Random inputs and labels for the compute-bound MLP: the benchmarks measure speed, not learning."""
    import torch

    return torch.randn(batch, COMPUTE_INPUTS), torch.randint(0, 10, (batch,))


def train_compute_mlp(lr, steps, width=COMPUTE_WIDTH, batch=COMPUTE_BATCH):
    """``steps`` SGD steps (learning rate ``lr``) of the compute-bound MLP on one torch thread, reporting
    ``loss`` each step; returns the last loss and ``body_s``, the seconds the function took."""
    import time

    import torch

    import jupyter_dist

    t0 = time.perf_counter()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = mlp(COMPUTE_INPUTS, width)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x, y = compute_batch(batch)
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        jupyter_dist.report(step=step, loss=loss.item())
    return {"loss": loss.item(), "body_s": time.perf_counter() - t0}


def data_parallel_mlp(steps, warmup, width=COMPUTE_WIDTH, batch=COMPUTE_BATCH, wrap_myself=False):
    """The compute-bound MLP as one rank of a data-parallel run (or alone in a process): ``steps`` SGD steps of
    ``batch`` samples on this rank timed between two barriers after ``warmup`` untimed ones (the loop's rate, not
    the job's start-up); ``wrap_myself``: the plain-PyTorch reference, ``DistributedDataParallel`` in a process
    group the caller made, else ``jupyter_dist.prepare``. Returns ``samples_per_s`` (all ranks') and ``seconds``."""
    import torch

    import jupyter_dist

    torch.manual_seed(jupyter_dist.rank())
    model = mlp(COMPUTE_INPUTS, width)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    if wrap_myself:
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        model, optimiser = jupyter_dist.prepare(model, optimiser)
    x, y = compute_batch(batch)
    distributed = torch.distributed.is_initialized()
    world = torch.distributed.get_world_size() if distributed else 1

    def step():
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimiser.step()

    elapsed = timed_steps(step, steps, warmup, torch.distributed.barrier if distributed else None)
    return {"samples_per_s": world * batch * steps / elapsed, "seconds": elapsed}


# --- the pieces of the benchmarks' own training functions -------------------------------------------------------
def timed_steps(step, steps, warmup, sync=None):
    """``warmup`` untimed calls of ``step``, then the seconds ``steps`` calls take between two ``sync()`` (a
    barrier between ranks, ``cuda.synchronize``): the training loop's rate, not the job's start-up."""
    import time

    for _ in range(warmup):
        step()
    if sync:
        sync()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    if sync:
        sync()
    return time.perf_counter() - started


def die_once(marker, settle=0.0):
    """Kill this process (SIGKILL: a worker lost, no clean-up) unless ``marker`` exists, which it creates first,
    so the attempt that runs again after the loss goes on. ``settle``: seconds to let the reports so far reach
    the kernel first."""
    import os
    import signal
    import time

    if os.path.exists(marker):
        return
    open(marker, "w").close()
    time.sleep(settle)
    os.kill(os.getpid(), signal.SIGKILL)


cloudpickle.register_pickle_by_value(sys.modules[__name__])
