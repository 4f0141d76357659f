"""Tiny in-test HTTP servers on loopback: a prometheus_client exporter to be scraped, and a stand-in for
the Prometheus query API that records request headers (for header/auth plumbing only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, Self
from urllib.parse import parse_qs, urlparse

from prometheus_client import CollectorRegistry, start_http_server

from tests.harness.loopback import LoopbackServer

__all__ = ["ApiStub", "Exporter"]


class Exporter:
    """Serves `registry` at http://127.0.0.1:<port>/metrics until closed."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._server, self._thread = start_http_server(0, addr="127.0.0.1", registry=registry)
        self.port: int = self._server.server_port

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Responder = Callable[[str, dict[str, list[str]]], tuple[int, dict[str, Any] | str]]


def _vector_one(path: str, params: dict[str, list[str]]) -> tuple[int, dict[str, Any] | str]:
    ts = float(params.get("time", ["0"])[0])
    return 200, {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [ts, "1"]}]}}  # fmt: skip


class ApiStub(LoopbackServer):
    """Answers like /api/v1/query (a vector of 1, or whatever `responder` says) and keeps every request's
    path, query parameters and headers in `requests`."""

    def __init__(self, responder: Responder = _vector_one) -> None:
        self.requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                params = parse_qs(url.query)
                stub.requests.append((url.path, params, dict(self.headers.items())))
                status, body = responder(url.path, params)
                raw = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/plain")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)
