"""The HTTP source: prometheus-api-client's `PrometheusConnect` over a requests session we configure.

What we add around the library, and why:
- Retries inside the timeout (`DeadlineAdapter`: connection errors, 429, 502-504; exponential backoff;
  `Retry-After` honoured): the configured timeout bounds a call, retries included, and the last response
  reaches us instead of a bare RetryError.
- Long queries (a plan's long label values) go as a form POST, which Prometheus takes on both query endpoints,
  so a URL too long for the server is not mistaken for an unreachable Prometheus.
- Typed errors: the library turns every non-200 into one exception holding `repr(bytes)`. A response hook
  on our session sees the response first: a Prometheus error body (`{"status":"error","errorType":...}`)
  becomes `QueryError` with the query text; any other HTTP error (proxy 502, auth 401, wrong prefix 404),
  a refused connection, DNS failure, timeout or TLS failure becomes `PrometheusUnreachable`.
- Exact times: the library rounds range start/end to whole seconds and drops `resultType`; we pass the
  times as parameters (they override its own) and infer the type from the result's shape.
- Long ranges are split into requests of at most 10,000 points (Prometheus refuses more than 11,000 per
  series) and merged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote_plus

import requests
from prometheus_api_client import PrometheusConnect
from requests.adapters import Retry

from monitor.source.deadline import DeadlineAdapter
from monitor.source.errors import PrometheusUnreachable, QueryError
from monitor.source.model import InstantResult, RangeResult, Series, parse_instant, parse_range
from monitor.source.redact import redact_url
from monitor.source.settings import SourceSettings

__all__ = ["MAX_GET_QUERY_CHARS", "MAX_POINTS_PER_REQUEST", "HttpPrometheusSource"]

log = logging.getLogger("planwatch.source")
MAX_POINTS_PER_REQUEST = 10_000
MAX_GET_QUERY_CHARS = 4096  # URL-encoded; many proxies refuse URLs past 8 KiB


class _ApiError(Exception):
    """Raised by the response hook; converted to a public error where the query text is known."""

    def __init__(self, status: int, error_type: str | None, message: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


def _check_response(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    if response.status_code < 400:
        return
    body = response.content  # read it all: the connection goes back to the pool
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("status") == "error":
        raise _ApiError(response.status_code, str(payload.get("errorType", "")), str(payload.get("error", "")))
    snippet = body[:200].decode(errors="replace").strip()
    raise _ApiError(response.status_code, None, f"HTTP {response.status_code} {response.reason}: {snippet}")


class _BearerFile(requests.auth.AuthBase):
    """`Authorization: Bearer <file contents>`, re-read per request (Kubernetes rotates projected tokens)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        with open(self.path, encoding="utf-8") as fh:
            request.headers["Authorization"] = f"Bearer {fh.read().strip()}"
        return request


class HttpPrometheusSource:
    """`PrometheusSource` over HTTP. Close it (or use `with`) to release the connection pool."""

    def __init__(self, settings: SourceSettings | Any, *, clock: Callable[[], float] = time.time) -> None:
        self.settings = SourceSettings.from_any(settings)
        self.url = self.settings.url
        self._clock = clock
        self._session = requests.Session()
        self._session.verify = self.settings.tls.verify
        tls = self.settings.tls
        if tls.cert_file is not None and tls.key_file is not None:
            self._session.cert = (str(tls.cert_file), str(tls.key_file))
        self._session.hooks["response"].append(_check_response)
        self._client = PrometheusConnect(
            url=self.url,
            headers=self._headers(),
            retry=self._retry(),
            auth=self._auth(),
            session=self._session,
            timeout=self.settings.timeout,  # its annotation says int; requests takes a float
            method=self.settings.method,
        )
        # Mounted over the library's own adapter (same prefix): retries inside the timeout, not per attempt.
        adapter = DeadlineAdapter(self.settings.timeout, self.settings.retries, self.settings.retry_backoff)
        for prefix in (self.url, "http://", "https://"):
            self._session.mount(prefix, adapter)

    def _headers(self) -> dict[str, str]:
        headers = dict(self.settings.headers)
        if self.settings.bearer_token is not None:
            headers["Authorization"] = f"Bearer {self.settings.bearer_token.get_secret_value()}"
        return headers

    def _auth(self) -> Any:
        s = self.settings
        if s.username is not None and s.password is not None:
            return (s.username, s.password.get_secret_value())
        if s.bearer_token_file is not None:
            return _BearerFile(str(s.bearer_token_file))
        return None

    def _retry(self) -> Retry:
        return Retry(total=0, raise_on_status=False)  # DeadlineAdapter retries; this only quiets the library's

    def instant(self, query: str, at: float | None = None) -> InstantResult:
        """Evaluate `query` at `at` (Unix seconds; now if None)."""
        evaluated_at = self._clock() if at is None else float(at)
        if self._long(query):
            result = self._call(query, lambda: self._post("query", {"query": query, "time": evaluated_at}))
        else:
            result = self._call(query, lambda: self._client.custom_query(query, params={"time": evaluated_at}))
        return parse_instant(query, evaluated_at, result)

    def range(self, query: str, start: float, end: float, step: float) -> RangeResult:
        """Evaluate `query` from `start` to `end` every `step` seconds, in as many requests as needed."""
        if step <= 0 or end < start:
            raise ValueError(f"bad range: start={start} end={end} step={step}")
        merged: dict[tuple[tuple[str, str], ...], Series] = {}
        for lo, hi in _chunks(start, end, step):
            part = parse_range(query, lo, hi, step, self._range_call(query, lo, hi, step))
            for series in part.series:
                key = tuple(sorted(series.labels.items()))
                old = merged.get(key)
                merged[key] = series if old is None else Series(old.labels, old.points + series.points)
        return RangeResult(query, start, end, step, tuple(merged.values()))

    def _range_call(self, query: str, lo: float, hi: float, step: float) -> Any:
        params = {"start": lo, "end": hi, "step": step}
        if self._long(query):
            return self._call(query, lambda: self._post("query_range", {"query": query, **params}))
        lo_dt, hi_dt = datetime.fromtimestamp(lo, UTC), datetime.fromtimestamp(hi, UTC)
        return self._call(query, lambda: self._client.custom_query_range(query, lo_dt, hi_dt, str(step), params))

    def _long(self, query: str) -> bool:
        """POST the query as a form when configured to, or when it would make the URL too long for servers and
        proxies (Prometheus takes a form POST on both query endpoints; the library's POST keeps the URL)."""
        return self.settings.method == "POST" or len(quote_plus(query)) > MAX_GET_QUERY_CHARS

    def _post(self, endpoint: str, form: dict[str, Any]) -> Any:
        response = self._session.post(
            f"{self.url}/api/v1/{endpoint}", data=form, headers=self._headers(), auth=self._auth(),
            timeout=self.settings.timeout,
        )  # fmt: skip
        return response.json()["data"]["result"]

    def raw_get(self, path: str) -> Any:
        """GET `<url><path>` with the same auth, TLS and retries; the decoded JSON body."""
        return self._call(path, lambda: self._session.get(
            self.url + path, headers=self._headers(), auth=self._auth(), timeout=self.settings.timeout,
        ).json())  # fmt: skip

    def _call(self, query: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except _ApiError as exc:
            if exc.error_type is None:
                raise PrometheusUnreachable(self.url, exc.message) from None
            raise QueryError(query, exc.status, exc.error_type, exc.message) from None
        except requests.exceptions.Timeout:
            raise PrometheusUnreachable(self.url, f"timed out after {self.settings.timeout:g}s") from None
        except requests.exceptions.SSLError as exc:
            raise PrometheusUnreachable(self.url, f"TLS failed: {_short(exc)}") from None
        except requests.exceptions.ConnectionError as exc:
            if "timed out" in str(exc):  # urllib3 wraps read timeouts in MaxRetryError once retries run out
                raise PrometheusUnreachable(self.url, f"timed out after {self.settings.timeout:g}s") from None
            raise PrometheusUnreachable(self.url, _connection_reason(exc)) from None
        except (ValueError, KeyError, TypeError) as exc:  # 200 but not the API's JSON (requests' JSONDecodeError)
            raise PrometheusUnreachable(self.url, f"not a Prometheus API response ({exc})") from None
        except requests.exceptions.RequestException as exc:
            raise PrometheusUnreachable(self.url, _short(exc)) from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpPrometheusSource({redact_url(self.url)!r})"


def _chunks(start: float, end: float, step: float) -> list[tuple[float, float]]:
    span = step * (MAX_POINTS_PER_REQUEST - 1)
    out, lo = [], start
    while True:
        hi = min(end, lo + span)
        out.append((lo, hi))
        if hi >= end:
            return out
        lo = hi + step


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."


def _connection_reason(exc: BaseException) -> str:
    text = str(exc)
    if "Connection refused" in text:
        return "connection refused"
    if any(s in text for s in ("NameResolution", "Name or service not known", "nodename nor servname", "resolve")):
        return f"DNS lookup failed ({_short(exc)})"
    return f"connection failed ({_short(exc)})"
