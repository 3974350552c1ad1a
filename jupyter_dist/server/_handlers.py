"""The REST API under the server's base URL: thin handlers over the store's ``StoreReader`` (a comparison: the
records it reads, reported as ``jupyter_dist.compare`` computes it, _compare.comparison_report).

Every handler requires Jupyter's authentication (``@tornado.web.authenticated``) and authorization
(``@authorized`` on the "jupyter_dist" resource, for servers with an authorizer). The reader's errors (and the
search's, for importances of a run that searched nothing), all in the JupyterDistError family, become JSON
answers: a bad argument 400, what the store lacks 404, a stop asked of an ended run 409.

The store is read on a thread of the server's executor, not on its event loop: an experiment's importances take
~2 s for 10,000 trials, which would otherwise stall every kernel's websocket, and every other view, of the server
for as long. An experiment's detail lists its first page of trials (TRIALS_PAGE), GET .../trials the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado.ioloop import IOLoop

from .._compare import comparison_report
from ..errors import ArgumentError, NotInStore, NotRunning
from ..store import CURVE_POINTS, MAX_PAGE, StoreReader
from ..store._reader import TRIALS_PAGE

AUTH_RESOURCE = "jupyter_dist"
STATUS = {ArgumentError: 400, NotInStore: 404, NotRunning: 409}


def whole_numbers(handler: APIHandler, **defaults: int) -> tuple[int, ...]:
    """The query arguments named (absent: their default) as numbers."""
    try:
        return tuple(int(handler.get_argument(name, None) or default) for name, default in defaults.items())
    except (TypeError, ValueError):
        raise ArgumentError(f"{', '.join(defaults)}: whole numbers") from None


def listed(handler: APIHandler, name: str) -> list[str]:
    """The query argument named as a list: its comma-separated parts (absent: none)."""
    text = handler.get_argument(name, None)
    return text.split(",") if text else []


class _Handler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def store(self) -> StoreReader:
        return self.settings["jupyter_dist_store"]

    async def answer(self, call: Callable[[], Any]) -> None:
        """Answer with what ``call`` returns, run on the executor, as JSON (the JSON too: a page of 10,000 trials
        is 4 MB of it), or with the error it raised."""
        loop = IOLoop.current()
        try:
            body = await loop.run_in_executor(None, lambda: json.dumps(call()))
        except tuple(STATUS) as exc:
            self.set_status(next(code for kind, code in STATUS.items() if isinstance(exc, kind)))
            body = json.dumps({"message": str(exc)})
        self.finish(body)


class ExperimentsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        def call():
            offset, limit = whole_numbers(self, offset=0, limit=100)
            return self.store.experiments(offset, limit)

        await self.answer(call)


class ExperimentHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        await self.answer(lambda: self.store.detail(experiment_id))


class TrialsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        def call():
            offset, limit = whole_numbers(self, offset=0, limit=TRIALS_PAGE)
            sort = self.get_argument("sort", None) or "best"
            state = self.get_argument("state", None) or None
            return self.store.trials(experiment_id, offset, limit, sort, state)

        await self.answer(call)


class MetricsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        def call():
            since, limit = whole_numbers(self, since=0, limit=MAX_PAGE)
            return self.store.metrics_page(experiment_id, since, limit)

        await self.answer(call)


class CurvesHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        def call():
            points, since, limit = whole_numbers(self, points=CURVE_POINTS, since=0, limit=MAX_PAGE)
            return self.store.curves(experiment_id, self.get_argument("trials", None), points, since, limit)

        await self.answer(call)


class UtilizationHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        def call():
            since, limit = whole_numbers(self, since=0, limit=MAX_PAGE)
            trial = self.get_argument("trial", None)
            if trial is not None and not trial.isdigit():
                raise ArgumentError(f"trial={trial[:20]!r}: a trial id")
            return self.store.utilization(experiment_id, None if trial is None else int(trial), since, limit)

        await self.answer(call)


class ImportancesHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str) -> None:
        from ..search import importances_report  # optuna only when an HPO view asks

        await self.answer(lambda: importances_report(self.store.record(experiment_id)))


class StopHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def post(self, experiment_id: str) -> None:
        def call():
            self.store.request_stop(experiment_id)
            return {"message": f"asked experiment {experiment_id} to stop"}

        self.set_status(202)
        await self.answer(call)


class LogsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self, experiment_id: str, trial_id: str) -> None:
        await self.answer(lambda: self.store.logs(experiment_id, int(trial_id)))


class CompareHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        await self.answer(lambda: comparison_report(self.store.records(listed(self, "experiments"))))


def handlers(base_url: str) -> list[tuple[str, type]]:
    api = url_path_join(base_url, "jupyter-dist", "api", "experiments")
    segment = r"([^/]+)"
    return [
        (api, ExperimentsHandler),
        (url_path_join(api, segment), ExperimentHandler),
        (url_path_join(api, segment, "trials"), TrialsHandler),
        (url_path_join(api, segment, "metrics"), MetricsHandler),
        (url_path_join(api, segment, "curves"), CurvesHandler),
        (url_path_join(api, segment, "utilization"), UtilizationHandler),
        (url_path_join(api, segment, "importances"), ImportancesHandler),
        (url_path_join(api, segment, "stop"), StopHandler),
        (url_path_join(api, segment, "logs", r"(\d+)"), LogsHandler),
        (url_path_join(base_url, "jupyter-dist", "api", "compare"), CompareHandler),
    ]
