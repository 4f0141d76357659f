"""Typed failures of the Prometheus adapter. The CLI maps them to exit statuses (unreachable -> 3)."""

from __future__ import annotations

from monitor.source.redact import redact_url

__all__ = ["PrometheusUnreachable", "QueryError", "SourceError"]


class SourceError(Exception):
    """Anything the Prometheus adapter raises."""


class PrometheusUnreachable(SourceError):
    """No answer from a Prometheus API at `url`: refused, DNS, timeout, TLS, an HTTP error that is not a
    Prometheus error (a proxy's 502, a 401 from an auth gateway, a 404 for a wrong path prefix), or a body
    that is not the API's JSON."""

    def __init__(self, url: str, reason: str) -> None:
        url = redact_url(url)  # the message and `url` are shown to people: no credentials
        super().__init__(f"Prometheus at {url} is unreachable: {reason}")
        self.url = url
        self.reason = reason


class QueryError(SourceError):
    """Prometheus answered with an error for this query (`bad_data` for a syntax error, `execution`,
    `timeout`, ...). Carries the query text so the message points at the culprit."""

    def __init__(self, query: str, status: int, error_type: str, message: str) -> None:
        super().__init__(f"query failed ({error_type}, HTTP {status}): {message}\n  query: {query}")
        self.query = query
        self.status = status
        self.error_type = error_type
        self.message = message
