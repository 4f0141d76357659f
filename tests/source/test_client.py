"""The HTTP source against a real Prometheus: typed results, typed errors, ranges split past 10,000 points."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from monitor.source import (
    MAX_POINTS_PER_REQUEST,
    HttpPrometheusSource,
    PrometheusSource,
    PrometheusUnreachable,
    QueryError,
    SourceSettings,
    check,
    measurement,
)
from tests.conftest import BackfillFactory
from tests.harness.history import History

pytestmark = pytest.mark.integration

T1 = 1_790_000_000.0


@pytest.fixture
def source(backfilled_prometheus: BackfillFactory) -> Iterator[HttpPrometheusSource]:
    h = History(T1 - 600, T1, step=15)
    h.gauge("vllm:num_requests_running", {"model_name": "m", "tier": "a", "pod": "a-0"}, 4)
    h.gauge("vllm:num_requests_running", {"model_name": "m", "tier": "b", "pod": "b-0"}, 2)
    h.histogram("vllm:time_to_first_token_seconds", {"model_name": "m", "tier": "a"}, {"1.0": 0.0, "+Inf": 0.0})
    prom = backfilled_prometheus(h.text())
    with HttpPrometheusSource(SourceSettings(url=prom.url, retries=0)) as source:
        yield source


def test_the_http_source_implements_the_protocol(source: HttpPrometheusSource) -> None:
    assert isinstance(source, PrometheusSource)


def test_instant_returns_typed_samples_at_the_given_time(source: HttpPrometheusSource) -> None:
    result = source.instant('vllm:num_requests_running{tier="a"}', at=T1 - 30)
    assert result.evaluated_at == T1 - 30
    assert [(dict(s.labels), s.value, s.timestamp) for s in result.samples] == [
        ({"__name__": "vllm:num_requests_running", "model_name": "m", "tier": "a", "pod": "a-0"}, 4.0, T1 - 30)
    ]


def test_a_scalar_result_is_one_unlabelled_sample(source: HttpPrometheusSource) -> None:
    result = source.instant("scalar(sum(vllm:num_requests_running))", at=T1)
    assert result.result_type == "scalar"
    assert [(dict(s.labels), s.value) for s in result.samples] == [({}, 6.0)]


def test_a_nan_quantile_and_an_empty_result_are_unknown(source: HttpPrometheusSource) -> None:
    nan = source.instant(
        "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))", T1
    )
    assert nan.samples[0].value != nan.samples[0].value  # NaN survives parsing as a float
    assert measurement(nan).reason.startswith("not a number")
    empty = source.instant('vllm:num_requests_running{tier="zzz"}', T1)
    assert empty.empty and measurement(empty).reason.startswith("no data")


def test_range_returns_series_at_each_step(source: HttpPrometheusSource) -> None:
    result = source.range('vllm:num_requests_running{tier="b"}', T1 - 120, T1, 30)
    [series] = result.series
    assert series.timestamps() == (T1 - 120, T1 - 90, T1 - 60, T1 - 30, T1)
    assert set(series.values()) == {2.0}


def test_a_range_longer_than_prometheus_allows_is_split_and_merged(source: HttpPrometheusSource) -> None:
    n = MAX_POINTS_PER_REQUEST + 500
    result = source.range("vector(1)", T1 - n + 1, T1, 1)
    [series] = result.series
    stamps = series.timestamps()
    assert len(stamps) == n and stamps == tuple(sorted(set(stamps)))
    assert (stamps[0], stamps[-1]) == (T1 - n + 1, T1)


def test_a_syntax_error_is_a_query_error_carrying_the_query(source: HttpPrometheusSource) -> None:
    bad = 'sum by (tier (vllm:num_requests_running{tier="a"})'
    with pytest.raises(QueryError) as err:
        source.instant(bad)
    assert (err.value.status, err.value.error_type, err.value.query) == (400, "bad_data", bad)
    assert bad in str(err.value) and "parse error" in err.value.message


def test_an_execution_error_is_a_query_error(source: HttpPrometheusSource) -> None:
    many = "vllm:num_requests_running + on (model_name) group_left () vllm:num_requests_running"
    with pytest.raises(QueryError) as err:
        source.instant(many, T1)
    assert err.value.error_type == "execution" and err.value.status == 422


def test_a_closed_port_is_unreachable_with_the_url_in_the_message() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with HttpPrometheusSource(SourceSettings(url=url, retries=0)) as dead, pytest.raises(PrometheusUnreachable) as err:
        dead.instant("vector(1)")
    assert err.value.url == url and url in str(err.value)
    assert err.value.reason == "connection refused"


def test_a_name_that_does_not_resolve_is_unreachable() -> None:
    url = "http://prometheus.invalid:9090"
    source = HttpPrometheusSource(SourceSettings(url=url, retries=0, timeout=5))
    with source as dead, pytest.raises(PrometheusUnreachable, match=r"prometheus\.invalid"):
        dead.range("up", T1 - 60, T1, 15)


def test_health_reports_version_or_reason(source: HttpPrometheusSource) -> None:
    health = check(source)
    assert health.reachable and health.version is not None and health.version.startswith("2.")
    with HttpPrometheusSource(SourceSettings(url="http://127.0.0.1:9", retries=0)) as dead:
        down = check(dead)
    assert (down.reachable, down.reason) == (False, "connection refused")
