"""A loopback reverse proxy that records every request's headers and forwards it to a real query API, the way
a tenant gateway (Mimir, Thanos, an auth proxy) sits in front of Prometheus."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["RecordingProxy"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "accept-encoding"}


class RecordingProxy:
    """Forwards GET and POST to `upstream`; `requests` holds (method, path, headers) of each one."""

    def __init__(self, upstream: str) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                headers = dict(self.headers.items())
                with proxy._lock:
                    proxy.requests.append((self.command, self.path, headers))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
                request = urllib.request.Request(upstream + self.path, data=body, headers=sent, method=self.command)
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, raw, kind = response.status, response.read(), response.headers.get("Content-Type")
                except urllib.error.HTTPError as exc:
                    status, raw, kind = exc.code, exc.read(), exc.headers.get("Content-Type")
                    exc.close()
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = _forward
            do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
