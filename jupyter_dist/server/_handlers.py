"""The REST API under the server's base URL: thin handlers over the store's ``StoreReader``.

Every handler requires Jupyter's authentication (``@tornado.web.authenticated``) and authorization
(``@authorized`` on the "jupyter_dist" resource, for servers with an authorizer). The reader's errors (and the
search's, for importances of a run that searched nothing), all in the JupyterDistError family, become JSON
answers: a bad argument 400, what the store lacks 404, a stop asked of an ended run 409.
"""

from __future__ import annotations

import json
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..errors import ArgumentError, NotInStore, NotRunning
from ..store import MAX_PAGE, StoreReader

AUTH_RESOURCE = "jupyter_dist"
STATUS = {ArgumentError: 400, NotInStore: 404, NotRunning: 409}


def whole_numbers(*values: str | None, defaults: tuple[int, ...]) -> tuple[int, ...]:
    """Query arguments (absent: their default) as numbers."""
    try:
        return tuple(int(value or default) for value, default in zip(values, defaults, strict=True))
    except (TypeError, ValueError):
        raise ArgumentError("offset, limit, since: whole numbers") from None


class _Handler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def store(self) -> StoreReader:
        return self.settings["jupyter_dist_store"]

    def answer(self, call) -> None:
        try:
            body: Any = call()
        except tuple(STATUS) as exc:
            self.set_status(next(code for kind, code in STATUS.items() if isinstance(exc, kind)))
            body = {"message": str(exc)}
        self.finish(json.dumps(body))


class ExperimentsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self) -> None:
        def call():
            offset, limit = whole_numbers(
                self.get_argument("offset", None), self.get_argument("limit", None), defaults=(0, 100)
            )
            return self.store.experiments(offset, limit)

        self.answer(call)


class ExperimentHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str) -> None:
        self.answer(lambda: self.store.detail(experiment_id))


class MetricsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str) -> None:
        def call():
            since, limit = whole_numbers(
                self.get_argument("since", None), self.get_argument("limit", None), defaults=(0, MAX_PAGE)
            )
            return self.store.metrics_page(experiment_id, since, limit)

        self.answer(call)


class ImportancesHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str) -> None:
        from ..search import importances_report  # optuna only when an HPO view asks

        self.answer(lambda: importances_report(self.store.record(experiment_id)))


class StopHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def post(self, experiment_id: str) -> None:
        def call():
            self.store.request_stop(experiment_id)
            return {"message": f"asked experiment {experiment_id} to stop"}

        self.set_status(202)
        self.answer(call)


class LogsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str, trial_id: str) -> None:
        self.answer(lambda: self.store.logs(experiment_id, int(trial_id)))


def handlers(base_url: str) -> list[tuple[str, type]]:
    api = url_path_join(base_url, "jupyter-dist", "api", "experiments")
    segment = r"([^/]+)"
    return [
        (api, ExperimentsHandler),
        (url_path_join(api, segment), ExperimentHandler),
        (url_path_join(api, segment, "metrics"), MetricsHandler),
        (url_path_join(api, segment, "importances"), ImportancesHandler),
        (url_path_join(api, segment, "stop"), StopHandler),
        (url_path_join(api, segment, "logs", r"(\d+)"), LogsHandler),
    ]
