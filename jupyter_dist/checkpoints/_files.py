"""Where checkpoints are, on any filesystem fsspec knows (a local path, NFS, s3://, gs://, memory://...).

A trial's directory holds one folder per checkpoint, ``step-<step>/`` (nine digits, so that names sort by step:
``step-000000004/``), and a checkpoint counts only once its ``complete`` marker is there: the marker is written
last, so a worker killed while saving leaves a folder without one, which is never restored and is removed by the
next save.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

MARKER = "complete"
# In a checkpoint copied for a PBT member (copy_checkpoint): the hyperparameters it goes on with, which restore()
# sets in the restored optimizers' param_groups (a state dict would bring back the donor's learning rate).
EXPLORED = "explored.json"
_STEP_FOLDER = re.compile(r"step-(\d+)$")


@dataclass(frozen=True)
class Saved:
    """One complete checkpoint of a trial."""

    step: int
    path: str  # its folder, as a URL or path the filesystem understands
    sharded: bool  # written by every rank with torch.distributed.checkpoint (a sharded model), not one file


def filesystem(directory: str):
    """The fsspec filesystem of ``directory`` and the path on it."""
    from fsspec.core import url_to_fs

    return url_to_fs(directory)


def step_folder(directory: str, step: int) -> str:
    return f"{directory.rstrip('/')}/step-{step:09d}"


def _folders(fs, path: str) -> list[tuple[int, str]]:
    """The trial's step folders, complete or not, oldest step first."""
    try:
        entries = fs.ls(path, detail=False)
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        match = _STEP_FOLDER.search(entry.rstrip("/"))
        if match:
            found.append((int(match.group(1)), entry.rstrip("/")))
    return sorted(found)


def complete(directory: str) -> list[Saved]:
    """The trial's complete checkpoints, oldest first."""
    fs, path = filesystem(directory)
    saved = []
    for step, folder in _folders(fs, path):
        found = _read_marker(fs, folder, step_folder(directory, step))
        if found is not None:  # else being written, or its writer died
            saved.append(found)
    return saved


def saved_at(folder: str) -> Saved | None:
    """The complete checkpoint in ``folder``; None if there is none."""
    fs, path = filesystem(folder)
    return _read_marker(fs, path.rstrip("/"), folder.rstrip("/"))


def _read_marker(fs, folder: str, named: str) -> Saved | None:
    """The checkpoint in ``folder`` (a path on ``fs``), named as the user's own path or URL names it."""
    try:
        with fs.open(f"{folder}/{MARKER}", "r") as marker:
            about = json.load(marker)
    except (FileNotFoundError, ValueError):
        return None
    return Saved(int(about["step"]), named, bool(about.get("sharded")))


def latest(directory: str) -> Saved | None:
    saved = complete(directory)
    return saved[-1] if saved else None


def mark_complete(folder: str, step: int, sharded: bool) -> None:
    fs, path = filesystem(folder)
    with fs.open(f"{path}/{MARKER}", "w") as marker:
        json.dump({"step": step, "sharded": sharded, "saved": time.time()}, marker)


def prune(directory: str, keep: int) -> None:
    """Remove all but the newest ``keep`` complete checkpoints, and the unfinished folders older than the newest
    complete one (left by a worker that died while saving)."""
    fs, path = filesystem(directory)
    saved = complete(directory)
    if not saved:
        return
    kept = {s.step for s in saved[-keep:]}
    newest = saved[-1].step
    for step, folder in _folders(fs, path):
        if step not in kept and step <= newest:
            fs.rm(folder, recursive=True)


def copy_checkpoint(saved: Saved, directory: str, explored: dict | None = None) -> Saved:
    """Copy the complete checkpoint ``saved`` into ``directory`` (a trial's), as its checkpoint of the same step,
    with ``explored`` (the hyperparameters that changed) beside it; the copy's marker is written last, so it
    counts only once whole. A FileNotFoundError when the original went away meanwhile (its trial's retention
    removed it): the partial copy is removed, and the caller takes the then newest."""
    fs, source = filesystem(saved.path)
    target = step_folder(directory, saved.step)
    _, target_path = filesystem(target)
    try:
        files = [f for f in fs.find(source) if not f.endswith(f"/{MARKER}")]
        if not fs.exists(f"{source}/{MARKER}"):
            raise FileNotFoundError(saved.path)
        fs.makedirs(target_path, exist_ok=True)
        for file in files:
            inner = file[len(source.rstrip("/")) :].lstrip("/")
            if inner == EXPLORED:
                continue
            fs.makedirs(f"{target_path}/{inner}".rsplit("/", 1)[0], exist_ok=True)
            fs.copy(file, f"{target_path}/{inner}")
        if explored:
            with fs.open(f"{target_path}/{EXPLORED}", "w") as out:
                json.dump(explored, out)
        if not fs.exists(f"{source}/{MARKER}"):  # removed while copied: some files may be missing
            raise FileNotFoundError(saved.path)
        fs.copy(f"{source}/{MARKER}", f"{target_path}/{MARKER}")
    except FileNotFoundError:
        if fs.exists(target_path):
            fs.rm(target_path, recursive=True)
        raise
    return Saved(saved.step, target, saved.sharded)


def explored_params(folder: str) -> dict:
    """The hyperparameters a copied checkpoint goes on with (``copy_checkpoint``); {} for any other."""
    fs, path = filesystem(folder)
    try:
        with fs.open(f"{path.rstrip('/')}/{EXPLORED}", "r") as source:
            return json.load(source)
    except FileNotFoundError:
        return {}


def remove(directory: str) -> None:
    """Remove a trial's checkpoint directory, if there is one."""
    fs, path = filesystem(directory)
    if fs.exists(path):
        fs.rm(path, recursive=True)
