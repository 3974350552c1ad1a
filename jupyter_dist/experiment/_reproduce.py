"""``exp.reproduce(trial_id)``: one trial of an experiment run again, exactly as its run ran it, in the kernel (so
``%debug`` and breakpoints work) or on the cluster; trials/_local_trial.py is how it runs.

The function is the run's own when the run was in this kernel; for a ``load()``ed experiment it is the one of the
same name defined in the notebook again. What the run recorded of its function and of the versions that matter
(``about``: the store's, or the live run's) is compared first, and a warning names what changed since.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

from .._version import run_versions
from ..errors import ArgumentError, JupyterDistError
from ..protocol import TrialState
from ..store import TrialRecord

__all__ = ["PLACES", "ReproduceWarning", "defined_again", "reproduce", "source_hash", "source_of", "trial_of"]

PLACES = ("kernel", "cluster")


class ReproduceWarning(UserWarning):
    """What a trial run again may not reproduce: its function or the versions that matter changed since."""


def source_of(fn: Callable) -> str | None:
    """The function's source as ``inspect`` finds it (a notebook cell's too); None where there is none."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return None


def source_hash(fn: Callable) -> str | None:
    """The SHA-256 of the function's source (what a run records, and what ``reproduce`` compares); None: none."""
    source = source_of(fn)
    return None if source is None else hashlib.sha256(source.encode()).hexdigest()


def reproduce(exp: Any, trial_id: int, on: str, fn: Callable | None) -> Any:
    """See ``Experiment.reproduce``. ``exp``: the Experiment (typed Any: it imports this module)."""
    if on not in PLACES:
        raise ArgumentError(
            f"on={on!r}: give 'kernel' (the default: %debug and breakpoints work) or 'cluster'"
        )
    rec = trial_of(exp, trial_id)
    how = exp._reproduction(rec)
    if fn is not None and not callable(fn):
        raise ArgumentError(f"fn={fn!r:.60} is not a function: give the training function, or leave fn out")
    about = exp._about or {}
    user_fn = fn or exp._function or defined_again(about.get("function"), exp.name, "reproduce")
    _warn_of_changes(about, user_fn, trial_id)
    trial_fn = exp._trial_function(user_fn)
    # stopped where its run stopped it: pruned, stopped with the run, or told to stop by its stop= goal
    stop_after = rec.steps if rec.stopped_at is not None else None
    arguments = (
        trial_fn,
        dict(rec.params),
        rec.seed,
        exp.id,
        rec.trial_id,
        stop_after,
        how.get("until_step"),
    )
    from ..trials import run_again

    if on == "kernel":
        return run_again(*arguments)
    from ..cluster import get_client

    resources = exp.record.definition.details.get("resources") or None
    return get_client(None).submit(run_again, *arguments, pure=False, resources=resources).result()


def trial_of(exp: Any, trial_id: Any) -> TrialRecord:
    """The trial ``trial_id`` of ``exp``, once it has ended; an ArgumentError naming the ids it has otherwise."""
    try:
        if isinstance(trial_id, bool) or not isinstance(trial_id, int):
            raise KeyError(trial_id)
        # Its params, seed, labels and checkpoint: a loaded run's reports and output stay unread (at 100,000
        # trials, reading or walking every trial's record took 0.5-1.4 s).
        rec = exp.record.trial_without_details(trial_id)
    except KeyError:
        ids = sorted(r.trial_id for r in exp.trial_records())
        shown = f"{ids[0]}..{ids[-1]}" if len(ids) > 5 else ", ".join(map(str, ids))
        raise ArgumentError(
            f"{exp.name!r} has no trial {trial_id!r}: its trials are {shown or 'none'} (exp.trials.trial_id)"
        ) from None
    if rec.state is TrialState.RUNNING:
        raise ArgumentError(f"trial {trial_id} of {exp.name!r} is still running: wait until it has ended")
    return rec


def defined_again(name: str | None, experiment: str, verb: str) -> Callable:
    """The function of the run's name, as the notebook (IPython's namespace, else ``__main__``) defines it now."""
    namespace = _notebook_namespace()
    found = namespace.get(name) if name else None
    if not callable(found):
        raise JupyterDistError(
            f"{experiment!r} ran {name or 'a function'}(), which is not defined in this notebook: define it again "
            f"(run its cell), or pass it: exp.{verb}(trial_id, fn=...)"
        )
    return found


def _notebook_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        return shell.user_ns
    return vars(sys.modules["__main__"])


def _warn_of_changes(about: dict[str, Any], fn: Callable, trial_id: int) -> None:
    """Warn, naming each, of what differs from what the run recorded: the function's source, the versions."""
    changed = []
    recorded, now_hash = about.get("source_sha256"), source_hash(getattr(fn, "fn", fn))
    if recorded and now_hash is not None and now_hash != recorded:
        changed.append(f"the source of {getattr(fn, '__name__', 'the function')}()")
    now = run_versions()
    for package, then in (about.get("versions") or {}).items():
        if package in now and now[package] != then:
            changed.append(f"{package} {then} → {now[package]}")
    if changed:
        warnings.warn(
            f"trial {trial_id} may not run as it ran: changed since its run: {'; '.join(changed)}",
            ReproduceWarning,
            stacklevel=3,
        )
