"""Is the query API there? Works across Prometheus-compatible servers.

Prometheus, Thanos and Mimir serve `/api/v1/status/buildinfo`; VictoriaMetrics and some gateways do not
(404, or a path prefix in front). The query API is what planwatch needs, so `vector(1)` decides: reachable
means it answered, and the build info is a bonus when present.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.source.client import HttpPrometheusSource
from monitor.source.errors import PrometheusUnreachable, QueryError, SourceError
from monitor.source.protocol import PrometheusSource

__all__ = ["Health", "check"]


@dataclass(frozen=True)
class Health:
    url: str
    reachable: bool
    reason: str = ""
    version: str | None = None


def check(source: PrometheusSource) -> Health:
    """Never raises for an unreachable server: the answer says so, with the reason."""
    try:
        result = source.instant("vector(1)")
    except PrometheusUnreachable as exc:
        return Health(source.url, False, exc.reason)
    except QueryError as exc:
        return Health(source.url, False, f"the server refused `vector(1)`: {exc.message}")
    if len(result.samples) != 1 or result.samples[0].value != 1.0:
        return Health(source.url, False, "`vector(1)` did not return 1: not a PromQL API")
    return Health(source.url, True, version=_version(source))


def _version(source: PrometheusSource) -> str | None:
    if not isinstance(source, HttpPrometheusSource):
        return None
    try:
        body = source.raw_get("/api/v1/status/buildinfo")
    except SourceError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    return str(data.get("version")) if isinstance(data, dict) and "version" in data else None
