"""Headers, auth, retries and non-Prometheus answers, against a loopback stub that records requests.

The stub only answers like the query API; everything about PromQL is tested against the real server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from monitor.source import HttpPrometheusSource, PrometheusUnreachable, QueryError, SourceSettings, check
from tests.harness.exporter import ApiStub


def _headers(stub: ApiStub) -> dict[str, str]:
    return {k.lower(): v for k, v in stub.requests[-1][2].items()}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param({"bearer_token": "s3cret"}, {"authorization": "Bearer s3cret"}, id="a bearer token"),
        pytest.param({"username": "ops", "password": "pw"}, {"authorization": "Basic b3BzOnB3"}, id="basic auth"),
        pytest.param(
            {"headers": {"X-Scope-OrgID": "tenant-1"}}, {"x-scope-orgid": "tenant-1"}, id="a tenant header for Mimir"
        ),
        pytest.param(
            {"headers": {"X-Scope-OrgID": "t"}, "bearer_token": "b"},
            {"x-scope-orgid": "t", "authorization": "Bearer b"},
            id="a tenant header with a bearer token",
        ),
    ],
)
def test_every_request_carries_the_configured_headers(settings: dict[str, Any], expected: dict[str, str]) -> None:
    with ApiStub() as stub, HttpPrometheusSource(SourceSettings(url=stub.url, **settings)) as source:
        source.instant("vector(1)", at=123.5)
        source.range("vector(1)", 100, 160, 30)
        for path, _params, headers in stub.requests:
            lowered = {k.lower(): v for k, v in headers.items()}
            assert {k: lowered.get(k) for k in expected} == expected, path
        assert stub.requests[0][0] == "/api/v1/query" and stub.requests[0][1]["time"] == ["123.5"]
        assert stub.requests[1][0] == "/api/v1/query_range"
        assert {k: stub.requests[1][1][k] for k in ("start", "end", "step")} == {
            "start": ["100"],
            "end": ["160"],
            "step": ["30"],
        }


def test_a_bearer_token_file_is_read_on_every_request(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    with ApiStub() as stub, HttpPrometheusSource(SourceSettings(url=stub.url, bearer_token_file=token)) as source:
        source.instant("vector(1)")
        assert _headers(stub)["authorization"] == "Bearer first"
        token.write_text("rotated")
        source.instant("vector(1)")
        assert _headers(stub)["authorization"] == "Bearer rotated"


def test_a_path_prefix_is_kept(tmp_path: Path) -> None:
    with ApiStub() as stub, HttpPrometheusSource(SourceSettings(url=f"{stub.url}/prometheus/")) as source:
        source.instant("vector(1)")
        assert stub.requests[-1][0] == "/prometheus/api/v1/query"


def _status(code: int, body: dict[str, Any] | str) -> Any:
    return lambda path, params: (code, body)


@pytest.mark.parametrize(
    ("responder", "error", "match"),
    [
        pytest.param(
            _status(401, "Unauthorized"),
            PrometheusUnreachable,
            "HTTP 401",
            id="an auth gateway's 401 is unreachable, with its status",
        ),
        pytest.param(
            _status(404, "404 page not found"),
            PrometheusUnreachable,
            "HTTP 404",
            id="a wrong path prefix is unreachable",
        ),
        pytest.param(
            _status(200, "<html>Grafana</html>"),
            PrometheusUnreachable,
            "not a Prometheus API",
            id="a 200 that is not the API's JSON is unreachable",
        ),
        pytest.param(
            _status(422, {"status": "error", "errorType": "execution", "error": "many-to-many"}),
            QueryError,
            "many-to-many",
            id="a Prometheus error body is a query error",
        ),
        pytest.param(
            _status(503, {"status": "error", "errorType": "timeout", "error": "query timed out"}),
            QueryError,
            "query timed out",
            id="a server-side query timeout is a query error",
        ),
    ],
)
def test_error_answers_become_typed_errors(responder: Any, error: type[Exception], match: str) -> None:
    with ApiStub(responder) as stub:
        source = HttpPrometheusSource(SourceSettings(url=stub.url, retries=0))
        with source, pytest.raises(error, match=match):
            source.instant("vector(1)")


def test_a_proxy_502_is_retried_with_backoff_then_unreachable() -> None:
    with ApiStub(_status(502, "Bad Gateway")) as stub:
        settings = SourceSettings(url=stub.url, retries=2, retry_backoff=0.01)
        with HttpPrometheusSource(settings) as source, pytest.raises(PrometheusUnreachable, match="HTTP 502"):
            source.instant("vector(1)")
        assert len(stub.requests) == 3


def test_a_transient_503_is_retried_until_it_succeeds() -> None:
    answers = iter([(503, "busy"), (503, "busy")])

    def flaky(path: str, params: dict[str, list[str]]) -> Any:
        return next(answers, None) or (200, {"status": "success", "data": {"resultType": "vector", "result": []}})

    with ApiStub(flaky) as stub, HttpPrometheusSource(SourceSettings(url=stub.url, retry_backoff=0.01)) as source:
        assert source.instant("up").empty
        assert len(stub.requests) == 3


def test_a_slow_server_times_out_as_unreachable() -> None:
    def slow(path: str, params: dict[str, list[str]]) -> Any:
        time.sleep(1.0)
        return 200, {"status": "success", "data": {"resultType": "vector", "result": []}}

    with ApiStub(slow) as stub:
        src = HttpPrometheusSource(SourceSettings(url=stub.url, timeout=0.2, retries=0))
        with src, pytest.raises(PrometheusUnreachable, match=r"timed out after 0\.2s"):
            src.instant("up")


def test_health_falls_back_to_a_query_when_buildinfo_is_missing() -> None:
    def no_buildinfo(path: str, params: dict[str, list[str]]) -> Any:
        if path.endswith("/buildinfo"):
            return 404, "not found"
        return 200, {
            "status": "success",
            "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "1"]}]},
        }

    with ApiStub(no_buildinfo) as stub, HttpPrometheusSource(SourceSettings(url=stub.url)) as source:
        health = check(source)
    assert (health.reachable, health.version) == (True, None)
