"""The worker's HTTP server (``inbox worker --metrics-port``): ``/livez``, ``/readyz`` and
the Prometheus metrics on every other path, as the server it replaces answered them.

It runs in threads of its own, not on the worker's event loop: a probe then still answers
when that loop is stuck, and says so, and a slow scrape (the queue gauges read the
database) never holds a probe up.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from processors._worker.health import Verdict, WorkerHealth

__all__ = ["ProbeServer"]

LIVENESS_PATH = "/livez"
READINESS_PATH = "/readyz"


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes come every few seconds: no line each (a library never prints)."""


class ProbeServer:
    """Serves ``health`` and ``registry`` on ``host:port`` until ``close()``."""

    def __init__(
        self, host: str, port: int, registry: CollectorRegistry, health: WorkerHealth
    ) -> None:
        self._health = health
        self._metrics = make_wsgi_app(registry)
        self._server = make_server(
            host, port, self._app, server_class=_Server, handler_class=_QuietHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="pg-inbox probes", daemon=True
        )
        self._thread.start()

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        judge: Callable[[float], Verdict] | None = {
            LIVENESS_PATH: self._health.liveness,
            READINESS_PATH: self._health.readiness,
        }.get(environ.get("PATH_INFO", ""))
        if judge is None:
            return self._metrics(environ, start_response)  # type: ignore[no-any-return]
        verdict = judge(time.monotonic())
        body = json.dumps(verdict.body()).encode()
        start_response(
            "200 OK" if verdict.ok else "503 Service Unavailable",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
