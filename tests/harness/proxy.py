"""A loopback reverse proxy that records every request's headers and forwards it to a real query API, the way
a tenant gateway (Mimir, Thanos, an auth proxy) sits in front of Prometheus."""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.harness.loopback import LoopbackServer

__all__ = ["RecordingProxy"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "accept-encoding"}


class RecordingProxy(LoopbackServer):
    """Forwards GET and POST to `upstream`, each after `delay` seconds (a Prometheus that answers, slowly);
    `requests` holds (method, path, headers) of each one."""

    def __init__(self, upstream: str, delay: float = 0.0) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                headers = dict(self.headers.items())
                with proxy._lock:
                    proxy.requests.append((self.command, self.path, headers))
                time.sleep(delay)
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
                except urllib.error.URLError as exc:  # upstream gone (a test's Prometheus already stopped)
                    status, raw, kind = 502, str(exc.reason).encode(), "text/plain"
                with contextlib.suppress(OSError):  # the client gave up waiting (a deadline passed)
                    self._answer(status, raw, kind)

            def _answer(self, status: int, raw: bytes, kind: str | None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = _forward
            do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)
