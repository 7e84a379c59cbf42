"""The operations endpoint of a long-running process: ``/metrics`` for Prometheus, ``/livez`` and ``/readyz``
for health checks, on ``METRICS_HOST``:``METRICS_PORT`` (unset: none; 0: any free port, named in the log).

- ``/metrics``: the process's registry in Prometheus's text format (the worker's gathers its pool processes').
- ``/livez``: 200 while the process serves at all; it checks nothing else.
- ``/readyz``: 200 when every dependency answers, 503 naming the ones that do not
  (``{"status": "unavailable", "failing": ["broker"], "checks": {...}}``); docker compose's health checks
  call it through ``mnemo health``.

A plain ``http.server`` in a daemon thread: it serves a scrape every few seconds, never users.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from shared.app.readiness import Readiness, process_probes
from shared.settings import Settings

METRICS_PATH, LIVENESS_PATH, READINESS_PATH = "/metrics", "/livez", "/readyz"
JSON = "application/json"
log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], role: str, registry: CollectorRegistry,
                 readiness: Readiness) -> None:
        super().__init__(address, _Handler)
        self.role, self.registry, self.readiness = role, registry, readiness


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == METRICS_PATH:
            self._answer(200, generate_latest(self.server.registry), CONTENT_TYPE_LATEST)
        elif path == LIVENESS_PATH:
            self._json(200, {"status": "ok", "role": self.server.role})
        elif path == READINESS_PATH:
            report = self.server.readiness.report()
            self._json(200 if report.ready else 503, {
                "status": "ok" if report.ready else "unavailable", "role": self.server.role,
                "failing": report.failing, "checks": report.checks})
        else:
            self._json(404, {"status": "not_found", "paths": [METRICS_PATH, LIVENESS_PATH, READINESS_PATH]})

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._answer(status, json.dumps(body).encode(), JSON)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and health checks every few seconds: not worth a log line each."""


def serve_operations(settings: Settings, database_url: str, role: str, *, broker: bool = True, llm: bool = True,
                     registry: CollectorRegistry = REGISTRY) -> AbstractContextManager[int | None]:
    """:func:`operations_endpoint` for a process that uses the database and, as said, the broker and the LLM:
    ``/readyz`` probes exactly those. Nothing is built when ``METRICS_PORT`` is unset."""
    if settings.metrics_port is None:
        return contextlib.nullcontext(None)
    readiness = Readiness(process_probes(settings, database_url, broker=broker, llm=llm), settings.secret_values())
    return operations_endpoint(settings, role, readiness, registry)


@contextmanager
def operations_endpoint(settings: Settings, role: str, readiness: Readiness,
                        registry: CollectorRegistry = REGISTRY) -> Iterator[int | None]:
    """Serve the endpoint for as long as the block runs; yields its port (None when ``METRICS_PORT`` is unset)."""
    if settings.metrics_port is None:
        yield None
        return
    server = _Server((settings.metrics_host, settings.metrics_port), role, registry, readiness)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="operations-endpoint", daemon=True)
    thread.start()
    log.info("mnemo %s: metrics and health checks on http://%s:%d (%s, %s, %s)", role, settings.metrics_host, port,
             METRICS_PATH, LIVENESS_PATH, READINESS_PATH)
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()
        readiness.close()
