"""Against a real Prometheus, with the scheduler running: stop Prometheus mid-run and start it again.

The live case reads an hour of the support copilot's fleetsim history through the product's observer
(`default_observer`), the service's clock at the history's end (10:30 New York on a Tuesday, business
hours): the recommendation is computed from what the fleet's vLLM and kube-state-metrics series say
(4 ready replicas, the plan's; about 50 req/s of morning demand that 4 replicas serve, one more held as the
floor of the coming peak, the plan copied with `spare: always`), then held while Prometheus is down.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from fleetsim.promstack import PrometheusProcess, free_port
from monitor.service.app import Services, build_services, default_observer
from tests.check.test_scenarios import COPILOT, REPO
from tests.harness.stack import Stack, wait_for
from tests.service.conftest import ApiClient, make_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


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


END = "2026-12-01T15:30:00Z"
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()


def _serve(
    tmp_path: Path, url: str, timeout: float = 2, clock: Callable[[], float] = time.time, plan: Path = COPILOT
) -> Services:
    settings = make_settings(tmp_path, evaluation_interval="1s", stale_after="1h", plan=str(plan),
                             prometheus={"url": url, "timeout": timeout, "retries": 0})  # fmt: skip
    return build_services(settings, default_observer(settings), clock=clock)


def _copilot_with_a_spare(tmp_path: Path) -> Path:
    """The copilot plan with `replicas.spare: always`: under the default `auto`, 4 replicas of 4 GPUs keep no
    spare (failures cost 5e-5 of a 1e-3 budget), and this test is about holding a recommendation above need."""
    text = COPILOT.read_text(encoding="utf-8")
    spared = text.replace(
        "replicas: {min: 1, max: 5, planned: 4}", "replicas: {min: 1, max: 5, planned: 4, spare: always}"
    )
    assert spared != text
    path = tmp_path / "support-copilot-spare.yaml"
    path.write_text(spared, encoding="utf-8")
    return path


def _backfill(data: Path) -> None:
    """An hour of the copilot fleet at its planned replicas, ending at END (fleetsim's direct block writer).
    Pinned to baseline: the test holds the demand read back to the plan's 50 req/s peak, which fleetsim's
    default (irregular) demand moves by the day's level (55.3 req/s on this day)."""
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", str(1 / 24), "--step", "15s",
            "--end", END, "--scenario", "baseline", "--prometheus-data", str(data)]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def _prometheus(stack: Stack, target: str, data: Path | None = None) -> PrometheusProcess:
    """The harness's Prometheus scraping the fleet every second; `stop_keeping_data` and `restart` are the outage."""
    return stack.prometheus(targets=[target], data_dir=data)


def test_an_outage_mid_run_degrades_holds_and_recovers(tmp_path: Path, fleet_target: str, stack: Stack) -> None:
    """Demand and replicas come from the fleet's history through the product's observer: the recommendation
    is live, then held while Prometheus is down, then live again."""
    _backfill(tmp_path / "data")
    with _prometheus(stack, fleet_target, tmp_path / "data") as prometheus:
        services = _serve(tmp_path, prometheus.url, timeout=10, clock=lambda: NOW, plan=_copilot_with_a_spare(tmp_path))
        api = ApiClient(services.app)
        services.start()
        try:
            _until(lambda: _rec(api).get("stale") is False and api.get("/readyz").status_code == 200, timeout=60)
            before = _rec(api)
            assert before["current_replicas"] == 4.0
            assert before["demand_rps"] == pytest.approx(50, rel=0.1)
            assert (before["needed_now"], before["recommended_replicas"], before["action"]) == (4, 5, "scale-up")

            prometheus.stop_keeping_data()
            degraded = _until(lambda: api.get("/readyz").status_code == 503 and api.get("/readyz").json())
            assert degraded["status"] == "degraded" and degraded["prometheus"]["reachable"] is False
            held = _until(lambda: _rec(api).get("stale") and _rec(api))
            assert held["recommended_replicas"] == before["recommended_replicas"] and held["action"] == "hold"
            assert held["current_replicas"] is None
            assert "planwatch_prometheus_up 0.0" in api.get("/metrics").text

            prometheus.restart()
            _until(lambda: api.get("/readyz").status_code == 200 and _rec(api).get("stale") is False, timeout=60)
            assert _rec(api)["current_replicas"] == 4.0
            assert "planwatch_prometheus_up 1.0" in api.get("/metrics").text
        finally:
            services.close()


def test_the_real_observer_reports_an_outage_as_unreachable_and_recovers(
    tmp_path: Path, fleet_target: str, stack: Stack
) -> None:
    """monitor.source's observer against a Prometheus with no vLLM series: reachable but all unknown (held,
    stale, yet ready), then PrometheusUnreachable while it is stopped (degraded), then ready again."""
    with _prometheus(stack, fleet_target) as prometheus:
        services = _serve(tmp_path, prometheus.url)
        api = ApiClient(services.app)
        services.start()
        try:
            ready = _until(lambda: api.get("/readyz").status_code == 200 and api.get("/readyz").json())
            assert ready["prometheus"]["reachable"] is True
            rec = _rec(api)
            assert rec["stale"] is True and rec["recommended_replicas"] == 4  # no data: the plan's replicas

            prometheus.stop_keeping_data()
            # Not ready can come first from the probe, before an evaluation has run into the outage: poll (one read
            # each time) until an evaluation has, then check what it says.
            degraded = _until(lambda: _readyz_after(api, 503, "unreachable"))
            assert any("Prometheus unreachable" in r for r in degraded["reasons"])
            assert _rec(api)["recommended_replicas"] == 4

            prometheus.restart()
            _until(lambda: api.get("/readyz").status_code == 200)
        finally:
            services.close()


def _readyz_after(api: ApiClient, status: int, outcome: str) -> dict[str, Any] | None:
    """/readyz's body once it answers `status` after an evaluation whose outcome was `outcome`, else None."""
    response = api.get("/readyz")
    body: dict[str, Any] = response.json()
    return body if response.status_code == status and body.get("last_outcome") == outcome else None


def _rec(api: ApiClient) -> dict[str, Any]:
    """The copilot's recommendation, or {} before the first evaluation."""
    response = api.get("/v1/recommendations")
    if response.status_code != 200:
        return {}
    (rec,) = response.json()["recommendations"]
    assert isinstance(rec, dict)
    return rec
