"""Serve a recorded /metrics body as a live target would: gauges as recorded, every counter, histogram bucket,
`_count` and `_sum` growing in proportion to the time since the server started, so rates are known exactly."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.harness.loopback import LoopbackServer

__all__ = ["ReplayExporter", "advance"]


def _cumulative_families(text: str) -> set[str]:
    kinds = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            kinds[name] = kind.strip()
    return {name for name, kind in kinds.items() if kind in ("counter", "histogram")}


def _sample_family(name: str, cumulative: set[str]) -> bool:
    for suffix in ("_total", "_bucket", "_count", "_sum", ""):
        if name.endswith(suffix) and name.removesuffix(suffix) in cumulative:
            return True
    return name in cumulative


def advance(text: str, factor: float) -> str:
    """`text` with every cumulative sample multiplied by `factor` (gauges and comments as they are)."""
    cumulative = _cumulative_families(text)
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            if _sample_family(head.split("{", 1)[0], cumulative):
                line = f"{head} {float(value) * factor!r}"
        out.append(line)
    return "\n".join(out) + "\n"


class ReplayExporter(LoopbackServer):
    """Serves `text` at /metrics; cumulative values are the recorded ones x (1 + seconds since start / `period`),
    so each grows at (recorded value / `period`) per second."""

    def __init__(self, text: str, period: float) -> None:
        self.start = time.time()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                factor = 1 + (time.time() - replay.start) / period
                body = advance(text, factor).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)
