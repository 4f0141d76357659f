"""Is the query API there? Works across Prometheus-compatible servers.

Prometheus, Thanos and Mimir serve `/api/v1/status/buildinfo`; VictoriaMetrics and some gateways do not
(404, or a path prefix in front). The query API is what planwatch needs, so `vector(1)` decides: reachable
means it answered, and the build info is a bonus when present.
"""

from __future__ import annotations

from monitor.observe.observer import SourceHealth
from monitor.source.client import HttpPrometheusSource
from monitor.source.errors import PrometheusUnreachable, QueryError, SourceError
from monitor.source.protocol import PrometheusSource

__all__ = ["check"]


def check(source: PrometheusSource, at: float | None = None) -> SourceHealth:
    """The probe, for the evaluation at `at`. Never raises for an unreachable server: the answer says so,
    with the reason."""
    try:
        result = source.instant("vector(1)")
    except PrometheusUnreachable as exc:
        return SourceHealth(False, source.url, exc.reason, checked_at=at)
    except QueryError as exc:
        return SourceHealth(False, source.url, f"the server refused `vector(1)`: {exc.message}", checked_at=at)
    if len(result.samples) != 1 or result.samples[0].value != 1.0:
        return SourceHealth(False, source.url, "`vector(1)` did not return 1: not a PromQL API", checked_at=at)
    return SourceHealth(True, source.url, checked_at=at, version=_version(source))


def _version(source: PrometheusSource) -> str | None:
    if not isinstance(source, HttpPrometheusSource):
        return None
    try:
        body = source.raw_get("/api/v1/status/buildinfo")
    except SourceError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    return str(data.get("version")) if isinstance(data, dict) and "version" in data else None
