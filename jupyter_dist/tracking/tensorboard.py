"""Experiments to TensorBoard event files: a run folder per trial, with its scalars and the hparams plugin's
summaries (``pip install 'jupyter_dist[tensorboard]'``).

The summaries are made with torch's ``torch.utils.tensorboard.summary`` (torch is a dependency already; it needs
only the ``tensorboard`` package, no TensorFlow) rather than tensorboardX, a second writer of the same format kept
by one person; the hparams summaries are torch's ``hparams()`` with the session's real status. The files are
written by ``EventFile`` (the format SummaryWriter writes, without a thread per file).
"""

from __future__ import annotations

import itertools
import numbers
import os
import re
import socket
import struct
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._events import (
    Destination,
    Event,
    ExperimentInfo,
    ExperimentStarted,
    Reported,
    TrialEnded,
    TrialInfo,
    TrialStarted,
    events_of,
    export,
    finite,
    require,
)

if TYPE_CHECKING:
    from ._events import Tracked

__all__ = ["TensorBoardDestination", "to_tensorboard"]

EXTRA = "jupyter_dist[tensorboard]"
# The scalar that holds a trial's value (its objective as judged: the last report, or the best one with
# objective_scope="max"/"min"), the hparams table's first metric column.
VALUE_TAG = "jupyter_dist/value"
# The hparams plugin's session status, by the trial's state.
STATUS = {"completed": "STATUS_SUCCESS", "failed": "STATUS_FAILURE", "running": "STATUS_RUNNING"}
_NOT_IN_A_FOLDER_NAME = re.compile(r"[^\w\-.]")
_numbers = itertools.count()  # event files made by this process: a part of their names, as TensorBoard's own


def to_tensorboard(exp: Tracked, log_dir: str | os.PathLike = "runs") -> str:
    """``exp.to_tensorboard()``: the experiment's event files written now; the experiment's folder."""
    require("tensorboard", EXTRA, "Experiment.to_tensorboard")
    destination = TensorBoardDestination(os.fspath(log_dir))
    export(destination, events_of(exp))
    return destination.folder


class TensorBoardDestination(Destination):
    """One experiment's folder of runs, an event file per trial."""

    def __init__(self, log_dir: str) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard.summary import text

        self._Event, self._Summary, self._text = Event, Summary, text
        self.log_dir = log_dir
        self.folder = log_dir
        self.info: ExperimentInfo | None = None
        self.files: dict[int, EventFile] = {}
        self._early: dict[int, list[Reported]] = {}

    def write(self, events: Sequence[Event]) -> None:
        Proto, Summary, Value = self._Event, self._Summary, self._Summary.Value
        for event in events:
            if isinstance(event, Reported):
                file = self.files.get(event.trial_id)
                if file is None:  # heard on Dask's thread before the loop's trial start: kept until then
                    self._early.setdefault(event.trial_id, []).append(event)
                    continue
                # A report's metrics as one event of simple values (what SummaryWriter.add_scalar writes for each)
                add = file.add
                for step, values, at in event.rows:
                    summary = Summary(value=[Value(tag=k, simple_value=float(v)) for k, v in values.items()])
                    add(Proto(wall_time=at, step=int(step), summary=summary))
            elif isinstance(event, TrialStarted):
                trial = event.trial
                if trial.trial_id not in self.files:
                    run = os.path.join(self.folder, f"trial-{trial.trial_id}")
                    self.files[trial.trial_id] = EventFile(run, Proto)
                    self.write(self._early.pop(trial.trial_id, ()))
            elif isinstance(event, TrialEnded):
                self._trial_ended(event.trial)
            elif isinstance(event, ExperimentStarted):
                self.info = event.experiment
                self.folder = os.path.join(self.log_dir, _folder_name(event.experiment.name))
        for file in self.files.values():
            file.flush()  # each batch on disk, so a TensorBoard reading the folder sees it

    def _trial_ended(self, trial: TrialInfo) -> None:
        file = self.files.pop(trial.trial_id, None)
        if file is None:
            return
        Proto, Summary = self._Event, self._Summary
        at, step = trial.ended, trial.steps
        value = finite(trial.value)
        if value is not None:
            summary = Summary(value=[Summary.Value(tag=VALUE_TAG, simple_value=value)])
            file.add(Proto(wall_time=at, step=step, summary=summary))
        if trial.logs:
            file.add(
                Proto(wall_time=at, step=step, summary=self._text("output", _as_markdown_code(trial.logs)))
            )
        for summary in _hparams(trial, self.info):
            file.add(Proto(wall_time=at, summary=summary))
        file.close()  # a thousand trials must not keep a thousand files open

    def close(self) -> None:
        for file in self.files.values():
            file.close()
        self.files.clear()


class EventFile:
    """A run's event file, written as the export process goes: TensorBoard's record format (length, its masked
    CRC-32C, the Event, its masked CRC-32C). What torch's SummaryWriter writes, without its thread and queue per
    file: measured, 60-80 us a scalar through them against ~8 us here, where a tight report loop sends ~90k a
    second (the CRC is tensorboard's own, in Python; a record's length recurs, so its CRC is kept)."""

    _length_crc: dict[int, bytes] = {}

    def __init__(self, run: str, Proto: Any) -> None:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

        self._crc = masked_crc32c
        os.makedirs(run, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_numbers)}"
        self.path = os.path.join(run, name)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close(), as the trial ends
        self.add(Proto(wall_time=time.time(), file_version="brain.Event:2"))

    def add(self, event: Any) -> None:
        data = event.SerializeToString()
        header = self._length_crc.get(len(data))
        if header is None:
            length = struct.pack("<Q", len(data))
            header = self._length_crc[len(data)] = length + struct.pack("<I", self._crc(length))
        self._file.write(header + data + struct.pack("<I", self._crc(data)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _hparams(trial: TrialInfo, info: ExperimentInfo | None) -> list:
    """The hparams plugin's three summaries for a trial's run: the experiment (which columns), the session's
    start (its hyperparameters) and end (its status)."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams.api_pb2 import Status
    from tensorboard.plugins.hparams.metadata import PLUGIN_DATA_VERSION, PLUGIN_NAME, SESSION_END_INFO_TAG
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo
    from torch.utils.tensorboard.summary import hparams

    columns = {**trial.params, **trial.labels, "state": trial.state}
    hparam_dict = {str(k): _hparam(v) for k, v in columns.items()}
    metrics = [VALUE_TAG] if finite(trial.value) is not None else []
    metrics += [name for name in (info.metrics if info else ()) if name in trial.last]
    metrics += [name for name in trial.last if name not in metrics]
    experiment, start, _ = hparams(hparam_dict, dict.fromkeys(metrics, 0.0))
    # torch's hparams() says every session succeeded; the trial's state says how it ended.
    status = Status.Value(STATUS.get(trial.state, "STATUS_UNKNOWN"))
    content = HParamsPluginData(
        session_end_info=SessionEndInfo(status=status, end_time_secs=trial.ended), version=PLUGIN_DATA_VERSION
    )
    metadata = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME, content=content.SerializeToString())
    )
    end = Summary(value=[Summary.Value(tag=SESSION_END_INFO_TAG, metadata=metadata)])
    return [experiment, start, end]


def _hparam(value: Any) -> int | float | str | bool:
    """A parameter as the hparams plugin takes one: a number, a string or a bool; anything else as its text."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):  # numpy's too
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return str(value)


def _folder_name(name: str) -> str:
    return _NOT_IN_A_FOLDER_NAME.sub("_", name) or "experiment"


def _as_markdown_code(text: str) -> str:
    # TensorBoard renders text summaries as Markdown: indented, the output keeps its lines and characters.
    return "\n".join("    " + line for line in text.splitlines())
