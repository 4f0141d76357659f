"""The configured timeout bounds a call to Prometheus, retries included; long queries go by POST."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from fleetsim.promstack import PrometheusProcess
from monitor.queries.selector import quote
from monitor.source import HttpPrometheusSource, PrometheusUnreachable, SourceSettings
from monitor.source.client import MAX_GET_QUERY_CHARS
from tests.harness.slow_proxy import SlowProxy

pytestmark = pytest.mark.integration


def _upstream(prometheus: PrometheusProcess) -> tuple[str, int]:
    parts = urlsplit(prometheus.url)
    return parts.hostname or "127.0.0.1", parts.port or 9090


@pytest.mark.parametrize(
    ("retries", "backoff"),
    [
        pytest.param(0, 0.0, id="without retries a 30 s stall ends at the 1 s timeout"),
        pytest.param(2, 0.1, id="with two retries the stall still ends at the 1 s timeout, not 3 s"),
        pytest.param(10, 0.5, id="ten retries with backoff fit inside the same 1 s"),
    ],
)
def test_a_stalled_prometheus_is_given_up_on_at_the_timeout(
    prometheus: PrometheusProcess, retries: int, backoff: float
) -> None:
    with SlowProxy(_upstream(prometheus), delay=30) as proxy:
        settings = SourceSettings(url=proxy.url, timeout=1.0, retries=retries, retry_backoff=backoff)
        with HttpPrometheusSource(settings) as source:
            started = time.monotonic()
            with pytest.raises(PrometheusUnreachable, match="timed out after 1s"):
                source.instant("vector(1)")
            elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 1.5, elapsed


def test_a_slow_prometheus_inside_the_timeout_answers(prometheus: PrometheusProcess) -> None:
    with (
        SlowProxy(_upstream(prometheus), delay=0.3) as proxy,
        HttpPrometheusSource(SourceSettings(url=proxy.url, timeout=5.0, retries=2)) as source,
    ):
        (sample,) = source.instant("vector(1)").samples
    assert sample.value == 1.0


@pytest.mark.parametrize(
    "method",
    [
        pytest.param("GET", id="a query too long for a URL goes as a form POST"),
        pytest.param("POST", id="method POST sends the query in the body, not the URL"),
    ],
)
def test_long_queries_reach_prometheus(prometheus: PrometheusProcess, method: str) -> None:
    value = 'x"} or vector(1) #' + "y" * (MAX_GET_QUERY_CHARS * 4)
    query = f"count(up{{tier={quote(value)}}}) or vector(0)"
    with HttpPrometheusSource(SourceSettings(url=prometheus.url, retries=0, method=method)) as source:
        (sample,) = source.instant(query).samples
        assert sample.value == 0.0  # no series has that tier: the value stayed one string literal
        result = source.range(query, time.time() - 60, time.time(), 15)
    assert {p.value for s in result.series for p in s.points} == {0.0}
