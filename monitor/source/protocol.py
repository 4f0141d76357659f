"""The seam: what every Prometheus source offers. The HTTP source and the in-memory fake both implement it,
so code above the seam is tested with recorded responses and run against any compatible server."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from monitor.source.model import InstantResult, RangeResult

__all__ = ["PrometheusSource"]


@runtime_checkable
class PrometheusSource(Protocol):
    """Instant and range queries; times in Unix seconds. Raises PrometheusUnreachable or QueryError."""

    url: str

    def instant(self, query: str, at: float | None = None) -> InstantResult: ...

    def range(self, query: str, start: float, end: float, step: float) -> RangeResult: ...
