"""The REST API under the server's base URL: thin handlers over ExperimentsManager.

Every handler requires Jupyter's authentication (``@tornado.web.authenticated``) and authorization
(``@authorized`` on the "jupyter_dist" resource, for servers with an authorizer).
"""

from __future__ import annotations

import json

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ._manager import MAX_PAGE, BadRequest, ExperimentsManager, NotFound, NotRunning, page_arguments

AUTH_RESOURCE = "jupyter_dist"


class _Handler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def manager(self) -> ExperimentsManager:
        return self.settings["jupyter_dist_manager"]

    def answer(self, call) -> None:
        try:
            body = call()
        except BadRequest as exc:
            self.set_status(400)
            body = {"message": str(exc)}
        except NotFound as exc:
            self.set_status(404)
            body = {"message": str(exc)}
        except NotRunning as exc:
            self.set_status(409)
            body = {"message": str(exc)}
        self.finish(json.dumps(body))


class ExperimentsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self) -> None:
        def call():
            offset, limit = page_arguments(
                self.get_argument("offset", None), self.get_argument("limit", None), 100
            )
            return self.manager.experiments(offset, limit)

        self.answer(call)


class ExperimentHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str) -> None:
        self.answer(lambda: self.manager.experiment(experiment_id))


class MetricsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str) -> None:
        def call():
            since, limit = page_arguments(
                self.get_argument("since", None), self.get_argument("limit", None), MAX_PAGE
            )
            return self.manager.metrics(experiment_id, since, limit)

        self.answer(call)


class StopHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def post(self, experiment_id: str) -> None:
        self.set_status(202)
        self.answer(lambda: self.manager.request_stop(experiment_id))


class LogsHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    def get(self, experiment_id: str, trial_id: str) -> None:
        self.answer(lambda: self.manager.logs(experiment_id, int(trial_id)))


def handlers(base_url: str) -> list[tuple[str, type]]:
    api = url_path_join(base_url, "jupyter-dist", "api", "experiments")
    segment = r"([^/]+)"
    return [
        (api, ExperimentsHandler),
        (url_path_join(api, segment), ExperimentHandler),
        (url_path_join(api, segment, "metrics"), MetricsHandler),
        (url_path_join(api, segment, "stop"), StopHandler),
        (url_path_join(api, segment, "logs", r"(\d+)"), LogsHandler),
    ]
