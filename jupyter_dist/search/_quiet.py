"""Optuna's per-trial INFO lines silenced while jupyter_dist calls it (the live view shows the same)."""

from __future__ import annotations

import contextlib
import logging
import threading

__all__ = ["quiet_optuna"]


class _QuietTell(logging.Filter):
    """Drops Optuna's INFO lines (study created, each trial told; the live view shows them) while we call it;
    the user's own Optuna logging is untouched. A filter, because set_verbosity() clears logging's caches."""

    active = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not getattr(self.active, "on", False)


_quiet = _QuietTell()
# Logger filters see only records logged to that very logger, so attach to the modules that log per trial.
for _name in ("optuna.study.study", "optuna.study._tell", "optuna.storages._in_memory"):
    logging.getLogger(_name).addFilter(_quiet)


@contextlib.contextmanager
def quiet_optuna():
    _quiet.active.on = True
    try:
        yield
    finally:
        _quiet.active.on = False
