"""What an experiment's workers publish on its Dask topic, each event as the scheduler takes it in. The scheduler
drops a run's topic when the run ends (trials/_channel.py), so a test that counts a run's events records them as
they are published, with a scheduler plugin, rather than reading the topic back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from distributed.diagnostics.plugin import SchedulerPlugin

from jupyter_dist.protocol import decode_all


class _Published(SchedulerPlugin):
    name = "jupyter_dist-test-published"

    def __init__(self) -> None:
        self.events: dict[str, list] = {}

    def log_event(self, topic: str, msg) -> None:
        if topic.startswith("jupyter_dist-"):
            self.events.setdefault(topic, []).append(msg)


@contextmanager
def published(scheduler) -> Iterator[dict[str, list]]:
    """The events published on jupyter_dist topics while the block runs, by topic (each one's message as sent);
    ``scheduler``: a Scheduler of this process (an embedded or in-process LocalCluster's)."""
    plugin = _Published()
    scheduler.add_plugin(plugin)
    try:
        yield plugin.events
    finally:
        scheduler.remove_plugin(name=plugin.name)


def sent_by(sent: dict[str, list], exp) -> list[bytes]:
    """The events ``exp``'s run published (``sent``: what ``published`` recorded), each as the scheduler took it."""
    return sent.get(f"jupyter_dist-{exp.id}", [])


def messages_by(sent: dict[str, list], exp) -> list[list]:
    """``sent_by``, each event decoded into its messages."""
    return [decode_all(msg) for msg in sent_by(sent, exp)]
