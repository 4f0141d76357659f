"""A webhook receiver for Alertmanager that prints each notification: the demo's (and compose's) pager.

Alertmanager's webhook body (version 4) carries a status and a list of alerts with labels and annotations;
one line per alert says what fired or resolved, on which tier, and its summary, so the console shows the
same story as Alertmanager. Run alone with `python -m fleetsim.alert_receiver --listen 127.0.0.1:9095`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AlertReceiver", "describe_notification", "main"]

_MAX_BODY = 1 << 20


def describe_notification(path: str, body: Mapping[str, Any]) -> list[str]:
    """One line per alert of a notification: 'PAGE firing KvCachePressure tier=standard: KV cache 97% full'."""
    route = path.rstrip("/").rsplit("/", 1)[-1] or "webhook"
    lines = []
    for alert in body.get("alerts") or []:
        labels, notes = alert.get("labels") or {}, alert.get("annotations") or {}
        where = " ".join(f"{k}={labels[k]}" for k in ("tier", "severity") if k in labels)
        summary = notes.get("summary") or notes.get("description") or ""
        status = alert.get("status") or body.get("status") or "?"
        lines.append(f"alert {route.upper()} {status} {labels.get('alertname', '?')} {where}: {summary}".rstrip(": "))
    return lines or [f"alert {route.upper()} {body.get('status', '?')} (no alerts in the notification)"]


class AlertReceiver:
    """Listens on loopback in a thread; `say` gets each line (the demo's console)."""

    def __init__(self, say: Callable[[str], None], host: str = "127.0.0.1", port: int = 0) -> None:
        self.received: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer((host, port), self._handler(say))
        self._thread = threading.Thread(target=self._server.serve_forever, name="alert-receiver", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> AlertReceiver:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self, say: Callable[[str], None]) -> type[BaseHTTPRequestHandler]:
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > _MAX_BODY:
                    self.send_error(413, "notification too large")
                    return
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self.send_error(400, "not JSON")
                    return
                received.append(body)
                for line in describe_notification(self.path, body):
                    say(line)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None  # the notification lines say it all

        return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Print each Alertmanager webhook notification.")
    parser.add_argument("--listen", default="127.0.0.1:9095", help="host:port to listen on")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    receiver = AlertReceiver(lambda line: print(line, flush=True), host or "127.0.0.1", int(port))
    print(f"alert receiver listening on {receiver.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        receiver.serve_forever()


if __name__ == "__main__":
    main()
