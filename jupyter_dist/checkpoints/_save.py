"""``checkpoint(step, state)`` and ``restore(state)``: what a training function calls so a re-run never starts
from zero.

``state`` is a dict of what to save: objects with ``state_dict()``/``load_state_dict()`` (models, optimizers, LR
schedulers, gradient scalers) are saved as their state dicts, anything else as it is (an epoch counter, an RNG
state, a metric). A data-parallel model is saved unwrapped, so a checkpoint loads into a plain model too.

- Whole models: rank 0 writes one file (``state.pt``, torch.save); every rank waits for it (a barrier), so no
  rank runs ahead of a checkpoint that is not there yet.
- Sharded models (FSDP, whose parameters are DTensors): every rank writes its shards with
  torch.distributed.checkpoint, which can load them back at another world size too.

Outside an experiment, or in an experiment run without checkpoints, both do nothing (``restore`` gives None),
so the same function still runs when called directly.

The DataLoaders prepare() made are saved too, without being named in ``state``: where each stands in its epoch
(under a key of the checkpoint's own, LOADERS), so that a job restarted with fewer or more ranks goes on with the
rest of the epoch instead of seeing its start again.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ..ddp import rank, unwrap, world_size
from ..ddp._context import run
from ..errors import ArgumentError
from ..trials import current_trial
from ._files import explored_params, filesystem, latest, mark_complete, prune, saved_at, step_folder

WHOLE = "state.pt"  # a whole checkpoint's one file
PLAIN = "plain.pt"  # a sharded checkpoint's values that are not state dicts, written by rank 0
# Beside the user's values: the positions of the trial's prepared DataLoaders, in the order prepare() made them.
LOADERS = "__jupyter_dist_loaders__"


@dataclass
class Checkpoint:
    """A checkpoint restored: its ``step``, what was saved (``state``: each stateful object loaded in place and
    given back as itself, the other values as saved), and its ``path`` (a folder)."""

    step: int
    state: dict[str, Any]
    path: str


def checkpoint(step: int, state: dict[str, Any]) -> str | None:
    """Save ``state`` as this trial's checkpoint of ``step``; every rank of a data-parallel trial calls it.

    Keeps the trial's newest few (``keep_checkpoints=``, 2 by default) and returns the checkpoint's folder;
    None outside an experiment.
    """
    _check(step, state)
    ctx = current_trial()
    if ctx is None or ctx.checkpoint_dir is None:
        return None
    folder = step_folder(ctx.checkpoint_dir, int(step))
    sharded = _is_sharded(state)
    ours = _loader_positions()
    if rank() == 0:
        fs, path = filesystem(folder)
        if fs.exists(path):  # an earlier attempt's unfinished (or superseded) save of the same step
            fs.rm(path, recursive=True)
        fs.makedirs(path, exist_ok=True)
    if sharded:
        _barrier()  # the folder is ready before any rank writes its shards
        _save_sharded(folder, state, ours)
    else:
        if rank() == 0:
            saved = {name: _saved_form(value) for name, value in state.items()}
            _write(f"{folder}/{WHOLE}", {**saved, **ours})
        _barrier()
    if rank() == 0:
        mark_complete(folder, int(step), sharded)
        prune(ctx.checkpoint_dir, ctx.keep_checkpoints or 1)
    _barrier()  # no rank goes on (or restores) before the checkpoint is complete
    ctx.checkpointed(int(step), folder, resumed=False)
    return folder


def restore(state: dict[str, Any] | None = None, *, path: str | None = None) -> Checkpoint | None:
    """The newest checkpoint of this trial (None if it has none: its first attempt), with the stateful objects
    of ``state`` loaded from it in place. A trial that resumes this way goes on from its step: its live curve
    continues from there, and ``report()`` without a step numbers on from it.

    A PBT member's restore from a better member's checkpoint sets the restored optimizers' hyperparameters that
    the population perturbed (a param_group key named as the function's argument, such as ``lr``) to the member's
    own values.

    ``path``: load that checkpoint instead (a folder from ``exp.checkpoint(trial_id)``), anywhere, e.g. the best
    trial's model into the notebook after the experiment.
    """
    if state is not None and not isinstance(state, dict):
        raise ArgumentError(f"restore(state): give a dict of what to load into, got {type(state).__name__}")
    ctx = current_trial()
    if path is None:
        if ctx is None or ctx.checkpoint_dir is None:
            return None
        saved = latest(ctx.checkpoint_dir)
        if saved is None:
            return None
    else:
        saved = saved_at(str(path))
        if saved is None:
            raise ArgumentError(
                f"restore(path={str(path)!r}): not a complete checkpoint (no folder with a marker)"
            )
    found, step, sharded = saved.path, saved.step, saved.sharded
    loaded = _load_sharded(found, state or {}) if sharded else _read(f"{found}/{WHOLE}")
    positions = loaded.pop(LOADERS, None)  # None: saved without prepared loaders, or before they were saved
    if path is None and positions is not None:  # a notebook's restore(path=) has no loaders of that trial
        loaders = run.loaders
        assert loaders is not None  # inside a trial (path is None)
        loaders.restore(positions)
    restored = {}
    for name, value in loaded.items():
        target = (state or {}).get(name)
        if _stateful(target):
            if not sharded:
                unwrap(target).load_state_dict(value)
            restored[name] = target
        else:
            restored[name] = value
    _apply_explored(explored_params(found), state or {})
    if path is None:
        assert ctx is not None  # (path is None: it returned above outside a trial)
        ctx.checkpointed(step, found, resumed=True)
    return Checkpoint(step, restored, found)


def _apply_explored(explored: dict[str, Any], state: dict[str, Any]) -> None:
    """A PBT member going on from another member's checkpoint with perturbed hyperparameters: an optimizer's
    state dict brings back the donor's values (its param_groups' ``lr``, ``momentum``, ``weight_decay``...), so
    each group key named as a perturbed argument of the training function gets the member's own value."""
    if not explored:
        return
    for value in state.values():
        optimizer = getattr(value, "optimizer", value)  # prepare()'s wrappers hold the optimizer itself
        for group in getattr(optimizer, "param_groups", None) or ():
            for name, setting in explored.items():
                if name in group:
                    group[name] = setting


# --- whole checkpoints ------------------------------------------------------------------------------------
def _saved_form(value: Any) -> Any:
    return unwrap(value).state_dict() if _stateful(value) else value


def _write(path: str, payload: dict) -> None:
    import torch

    fs, inner = filesystem(path)
    with fs.open(inner, "wb") as out:
        torch.save(payload, out)


def _read(path: str) -> dict:
    import torch

    fs, inner = filesystem(path)
    with fs.open(inner, "rb") as source:
        # The trial's own file, with whatever the user put in it (not only tensors): not weights_only.
        return torch.load(source, map_location="cpu", weights_only=False)


# --- sharded checkpoints ----------------------------------------------------------------------------------
def _save_sharded(folder: str, state: dict[str, Any], ours: dict[str, Any]) -> None:
    import torch.distributed.checkpoint as dcp

    stateful, plain = _split(state)
    dcp.save(_sharded_state_dicts(stateful), checkpoint_id=folder, no_dist=not _distributed())
    if rank() == 0:
        _write(f"{folder}/{PLAIN}", {**plain, **ours})


def _load_sharded(folder: str, state: dict[str, Any]) -> dict[str, Any]:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

    stateful, _ = _split(state)
    target = _sharded_state_dicts(stateful)
    with warnings.catch_warnings():  # loading in one process (the notebook) is what no_dist says
        warnings.filterwarnings("ignore", message="torch.distributed is disabled", category=UserWarning)
        dcp.load(target, checkpoint_id=folder, no_dist=not _distributed())
    model = _the_model(stateful)
    for name, obj in stateful.items():
        if unwrap(obj) is model:
            set_model_state_dict(model, target[name])
        elif _is_optimizer(obj):
            set_optimizer_state_dict(model, getattr(obj, "optimizer", obj), target[name])
        else:
            obj.load_state_dict(target[name])
    loaded = dict(_read(f"{folder}/{PLAIN}"))
    loaded.update(stateful)
    return loaded


def _sharded_state_dicts(stateful: dict[str, Any]) -> dict[str, Any]:
    """Each object's state dict as torch.distributed.checkpoint wants it (a sharded model's and its optimizer's
    through get_*_state_dict, which name the optimizer's state by parameter name)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

    model = _the_model(stateful)
    out: dict[str, Any] = {}
    for name, obj in stateful.items():
        if unwrap(obj) is model:
            out[name] = get_model_state_dict(model)
        elif _is_optimizer(obj):  # prepare()'s wrapper (accumulation, fp16) holds the optimizer itself
            out[name] = get_optimizer_state_dict(model, getattr(obj, "optimizer", obj))
        else:
            out[name] = obj.state_dict()
    return out


def _the_model(stateful: dict[str, Any]):
    import torch

    models = [unwrap(obj) for obj in stateful.values() if isinstance(obj, torch.nn.Module)]
    if len(models) != 1:
        raise ArgumentError(
            f"checkpoint(): a sharded checkpoint takes one model (and its optimizer), got {len(models)} models"
        )
    return models[0]


def _loader_positions() -> dict[str, Any]:
    """The trial's prepared DataLoaders' positions, under LOADERS; nothing when it has none (an HPO trial's
    checkpoint stays as it was)."""
    registry = run.loaders
    if registry is None or not registry.loaders:
        return {}
    return {LOADERS: registry.states()}


# --- what the state holds ---------------------------------------------------------------------------------
def _check(step: Any, state: Any) -> None:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ArgumentError(f"checkpoint(step, state): step must be an int >= 0, got {step!r}")
    if not isinstance(state, dict) or not state:
        raise ArgumentError(
            "checkpoint(step, state): state must be a non-empty dict, e.g. {'model': model, 'optimizer': opt}, "
            f"got {type(state).__name__}"
        )
    if LOADERS in state:
        raise ArgumentError(
            f"checkpoint(step, state): the key {LOADERS!r} is jupyter_dist's own (the prepared DataLoaders' "
            "positions, saved without being named); give the value another name"
        )


def _stateful(value: Any) -> bool:
    return callable(getattr(value, "state_dict", None)) and callable(getattr(value, "load_state_dict", None))


def _is_optimizer(value: Any) -> bool:
    import torch

    return isinstance(value, torch.optim.Optimizer)


def _split(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    stateful = {name: value for name, value in state.items() if _stateful(value)}
    return stateful, {name: value for name, value in state.items() if name not in stateful}


def _is_sharded(state: dict[str, Any]) -> bool:
    """Whether a model in ``state`` has DTensor parameters (FSDP2's fully_shard, at any world size, one rank too):
    its shards are on every rank."""
    import torch
    from torch.distributed.tensor import DTensor

    return any(
        isinstance(p, DTensor)
        for value in state.values()
        if isinstance(value, torch.nn.Module)
        for p in value.parameters()
    )


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _barrier() -> None:
    if world_size() > 1 and _distributed():
        import torch.distributed as dist

        dist.barrier()
