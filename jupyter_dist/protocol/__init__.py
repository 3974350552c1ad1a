"""The trial protocol: the vocabulary every layer shares, and the messages between workers and the kernel.

- ``ExperimentKind``, ``TrialState``, ``ExperimentState``, ``Direction``, ``ErrorKind``: named states instead of
  bare strings. They are ``str`` enums, so ``exp.state == "completed"`` and the DataFrames' plain strings keep
  working, and the store keeps their plain values.
- ``Objective``: the one place that knows which metric counts, which way is better and over which of a trial's
  reports (its ``scope``: ``ScopedValue``); it picks the values the pruner judges and each trial's final value,
  and says, in one message, when the metric is missing.
- ``Outcome``: how one trial attempt (or one rank of it) ended, built on the worker, decoded in the kernel.
- ``TrialTask``: what one trial task is told (kernel → worker): the function, the parameters, where to report,
  its rank, its GPUs and checkpoints; ``CheckpointPlan``: where a trial's checkpoints go and how many are kept.
- GPUs as Dask resources (``GPU``, ``GPU-<type>``) and shares of one that add up (_gpus).
- ``derive_seed``, ``draw_seed``: each trial's seed, from its experiment's (the same rule in kernel and worker).
- The wire: reports, output, checkpoints saved or resumed from, utilisation samples and outcomes travel as Dask
  events. The messages (plain dicts with short keys, made by ``encode_*``) sent at the same moment travel together
  in one event, packed by ``pack_event`` as msgpack bytes (worker side); ``decode_all`` is its only reader (kernel
  side).
"""

from ._gpus import (
    GPU,
    SHARE_EPSILON,
    dask_request,
    declared_types,
    gpu_type_resource,
    how_many_fit,
    type_from_device_name,
)
from ._messages import CheckpointPlan, Outcome, RankInfo, Regrouped, TrialTask
from ._objective import SCOPES, Objective, ScopedValue, check_scope
from ._seeds import SEED_RANGE, derive_seed, draw_seed
from ._states import Direction, ErrorKind, ExperimentKind, ExperimentState, TrialState
from ._wire import (
    CheckpointEvent,
    LogLine,
    ReportBatch,
    ReportRow,
    UtilizationSample,
    decode,
    decode_all,
    encode_checkpoint,
    encode_log,
    encode_outcome,
    encode_reports,
    encode_utilization,
    pack_event,
)

__all__ = [
    "GPU",
    "SHARE_EPSILON",
    "dask_request",
    "declared_types",
    "gpu_type_resource",
    "how_many_fit",
    "type_from_device_name",
    "CheckpointEvent",
    "CheckpointPlan",
    "Regrouped",
    "Direction",
    "ErrorKind",
    "ExperimentKind",
    "ExperimentState",
    "LogLine",
    "Objective",
    "Outcome",
    "RankInfo",
    "ReportBatch",
    "SCOPES",
    "SEED_RANGE",
    "ScopedValue",
    "ReportRow",
    "TrialState",
    "TrialTask",
    "UtilizationSample",
    "check_scope",
    "decode",
    "derive_seed",
    "draw_seed",
    "decode_all",
    "encode_checkpoint",
    "encode_log",
    "encode_outcome",
    "encode_reports",
    "encode_utilization",
    "pack_event",
]
