"""Against a real Prometheus, with the scheduler running: stop Prometheus mid-run and start it again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from monitor.service.app import Services, build_services, default_collector
from tests.harness.stack import wait_for
from tests.service.conftest import ApiClient, make_settings
from tests.service.prometheus import PROMETHEUS, free_port, prometheus_collector, running_prometheus

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed"),
]


@pytest.fixture
def fleet_target() -> Iterator[str]:
    """What the fleet exports: 30 req/s of demand on 3 ready copilot replicas."""
    registry = CollectorRegistry()
    Gauge("fleet_demand_rps", "demand", ["tier"], registry=registry).labels("copilot").set(30)
    Gauge("fleet_replicas_ready", "ready", ["tier"], registry=registry).labels("copilot").set(3)
    port = free_port()
    server, thread = start_http_server(port, "127.0.0.1", registry=registry)
    yield f"127.0.0.1:{port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    return wait_for(check, timeout, "the advisor to reach the state")


def _serve(tmp_path: Path, url: str, real_collector: bool) -> Services:
    settings = make_settings(tmp_path, evaluation_interval="1s", stale_after="1h",
                             prometheus={"url": url, "timeout": 2, "retries": 0})  # fmt: skip
    collector = default_collector(settings) if real_collector else prometheus_collector(url)
    return build_services(settings, collector)


def test_an_outage_mid_run_degrades_holds_and_recovers(tmp_path: Path, fleet_target: str) -> None:
    """Demand and replicas come from Prometheus: the recommendation is live, then held, then live again."""
    with running_prometheus(tmp_path, fleet_target) as prometheus:
        services = _serve(tmp_path, prometheus.url, real_collector=False)
        api = ApiClient(services.app)
        services.start()
        try:
            _until(lambda: _rec(api).get("stale") is False and api.get("/readyz").status_code == 200)
            before = _rec(api)
            assert before["current_replicas"] == 3.0 and before["demand_rps"] == 30.0

            prometheus.stop()
            degraded = _until(lambda: api.get("/readyz").status_code == 503 and api.get("/readyz").json())
            assert degraded["status"] == "degraded" and degraded["prometheus"]["reachable"] is False
            held = _until(lambda: _rec(api).get("stale") and _rec(api))
            assert held["recommended_replicas"] == before["recommended_replicas"] and held["action"] == "hold"
            assert held["current_replicas"] is None
            assert "planwatch_prometheus_up 0.0" in api.get("/metrics").text

            prometheus.start()
            _until(lambda: api.get("/readyz").status_code == 200 and _rec(api).get("stale") is False)
            assert _rec(api)["current_replicas"] == 3.0
            assert "planwatch_prometheus_up 1.0" in api.get("/metrics").text
        finally:
            services.close()


def test_the_real_collector_reports_an_outage_as_unreachable_and_recovers(tmp_path: Path, fleet_target: str) -> None:
    """monitor.source's collector against a Prometheus with no vLLM series: reachable but all unknown (held,
    stale, yet ready), then PrometheusUnreachable while it is stopped (degraded), then ready again."""
    with running_prometheus(tmp_path, fleet_target) as prometheus:
        services = _serve(tmp_path, prometheus.url, real_collector=True)
        api = ApiClient(services.app)
        services.start()
        try:
            ready = _until(lambda: api.get("/readyz").status_code == 200 and api.get("/readyz").json())
            assert ready["prometheus"]["reachable"] is True
            rec = _rec(api)
            assert rec["stale"] is True and rec["recommended_replicas"] == 4  # no data: the plan's replicas

            prometheus.stop()
            degraded = _until(lambda: api.get("/readyz").status_code == 503 and api.get("/readyz").json())
            assert degraded["last_outcome"] == "unreachable"
            assert any("Prometheus unreachable" in r for r in degraded["reasons"])
            assert _rec(api)["recommended_replicas"] == 4

            prometheus.start()
            _until(lambda: api.get("/readyz").status_code == 200)
        finally:
            services.close()


def _rec(api: ApiClient) -> dict[str, Any]:
    """The copilot's recommendation, or {} before the first evaluation."""
    response = api.get("/v1/recommendations")
    if response.status_code != 200:
        return {}
    (rec,) = response.json()["recommendations"]
    assert isinstance(rec, dict)
    return rec
