"""fleetsim as a V0 fleet in a cluster without kube-state-metrics, scraped by VictoriaMetrics, read by the
observer end to end: the same planwatch against a second backend, through its Prometheus-compatible API."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from monitor.observe.model import TierObservation
from monitor.observer import PrometheusObserver
from monitor.source import HttpPrometheusSource, SourceSettings

from .conftest import SPEED, LiveFleet, serve_and_scrape
from .helpers import tiny_plan
from .test_prometheus import RPS, WINDOW, wait_for_scrapes

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TierObservation]:
    work = tmp_path_factory.mktemp("victoria-v0")
    with serve_and_scrape(work, "v0", "victoria-metrics", ("--no-kube-state-metrics",)) as live:
        wait_for_scrapes(live)
        yield _collect(live)


def _collect(live: LiveFleet) -> TierObservation:
    url = str(live.prometheus.base_url).rstrip("/")
    with HttpPrometheusSource(SourceSettings(url=url, retries=0)) as source:
        observer = PrometheusObserver(source, long_window="1h", recording_rules=False, min_requests=10)
        return observer.collect(tiny_plan(rps=RPS, replicas=2), time.time(), WINDOW)["fast"]


@pytest.mark.parametrize(
    ("field", "low", "high", "reason"),
    [
        pytest.param("replicas_up", 2, 2, "", id="both replicas are up"),
        pytest.param("replicas_ready", 2, 2, "kube-state-metrics absent: replicas up",
                     id="without kube-state-metrics ready replicas are the replicas up, not 0"),
        pytest.param("request_rate", 0.5 * RPS * SPEED, 1.5 * RPS * SPEED, "",
                     id="the request rate is the plan's, time compressed"),
        pytest.param("kv_occupancy_mean", 0.0, 1.0, "", id="V0's gpu_cache_usage_perc reads as KV occupancy"),
        pytest.param("prefix_hit_rate", 0.0, 1.0, "", id="V0's prefix-cache gauge stands in for the counters"),
    ],
)  # fmt: skip
def test_observer_reads_a_v0_fleet_through_victoria_metrics(
    observed: TierObservation, field: str, low: float, high: float, reason: str
) -> None:
    m = getattr(observed, field)
    assert m.value is not None and low <= m.value <= high, m
    assert reason in m.reason


def test_without_kube_state_metrics_cold_start_says_why(observed: TierObservation) -> None:
    assert observed.cold_start_p95.value is None
    assert "kube-state-metrics reports none of the tier's pods" in observed.cold_start_p95.reason
