"""An in-memory `PrometheusSource` that answers from recorded API responses, for unit tests of the code
above the seam. Responses go through the same parser as live ones, and errors are raised as the HTTP
source raises them, so a test that passes here sees what production would.

Fixture format (JSON): `{"instant": {query: body}, "range": {query: body}}`, where a body is what the
Prometheus API returned (`{"status": "success", "data": {...}}` or `{"status": "error", ...}`). `record()`
writes one from a live source.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from monitor.source.errors import PrometheusUnreachable, QueryError
from monitor.source.model import InstantResult, RangeResult, parse_instant, parse_range
from monitor.source.protocol import PrometheusSource

__all__ = ["FakePrometheusSource", "UnrecordedQuery", "record"]


class UnrecordedQuery(KeyError):
    """The code under test ran a query the fixture does not hold (so the test would be meaningless)."""


class FakePrometheusSource:
    """Answers each query with its recorded body; `unreachable` makes every call fail like a dead server."""

    def __init__(
        self,
        instant: Mapping[str, Mapping[str, Any]] | None = None,
        range: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        url: str = "http://fake-prometheus:9090",
        now: float = 1_800_000_000.0,
        unreachable: str | None = None,
    ) -> None:
        self.url = url
        self.now = now
        self.unreachable = unreachable
        self._instant = dict(instant or {})
        self._range = dict(range or {})
        self.calls: list[str] = []

    @classmethod
    def from_json(cls, path: Path, **kwargs: Any) -> FakePrometheusSource:
        data = json.loads(path.read_text())
        return cls(data.get("instant", {}), data.get("range", {}), **kwargs)

    def instant(self, query: str, at: float | None = None) -> InstantResult:
        data = self._answer(self._instant, query)
        return parse_instant(query, self.now if at is None else float(at), data["result"], data["resultType"])

    def range(self, query: str, start: float, end: float, step: float) -> RangeResult:
        data = self._answer(self._range, query)
        return parse_range(query, start, end, step, data["result"])

    def _answer(self, book: Mapping[str, Mapping[str, Any]], query: str) -> Mapping[str, Any]:
        self.calls.append(query)
        if self.unreachable is not None:
            raise PrometheusUnreachable(self.url, self.unreachable)
        if query not in book:
            raise UnrecordedQuery(f"no recorded response for query: {query}")
        body = book[query]
        if body.get("status") == "error":
            raise QueryError(query, int(body.get("httpStatus", 400)), str(body.get("errorType", "")),
                             str(body.get("error", "")))  # fmt: skip
        data: Mapping[str, Any] = body["data"]
        return data


def record(
    source: PrometheusSource,
    instant: Iterable[str] = (),
    at: float | None = None,
    ranges: Iterable[tuple[str, float, float, float]] = (),
) -> dict[str, Any]:
    """Run queries against a live source and return a fixture `FakePrometheusSource` replays."""
    out: dict[str, Any] = {"instant": {}, "range": {}}
    for query in instant:
        out["instant"][query] = source.instant(query, at).to_json()
    for query, start, end, step in ranges:
        out["range"][query] = source.range(query, start, end, step).to_json()
    return out
