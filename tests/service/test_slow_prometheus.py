"""A stalled Prometheus costs an evaluation cycle the configured timeout, not timeout x (retries + 1)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fleetsim.promstack import PrometheusProcess
from monitor.service.app import build_services
from tests.harness.proxy import RecordingProxy
from tests.harness.slow_proxy import SlowProxy
from tests.service.conftest import ApiClient, make_settings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "retries",
    [
        pytest.param(0, id="without retries the cycle ends at the 1 s timeout"),
        pytest.param(3, id="with three retries the cycle still ends at the 1 s timeout"),
    ],
)
def test_a_stalled_prometheus_bounds_the_cycle_by_the_timeout(
    tmp_path: Path, prometheus: PrometheusProcess, retries: int
) -> None:
    upstream = urlsplit(prometheus.url)
    with SlowProxy((upstream.hostname or "127.0.0.1", upstream.port or 9090), delay=30) as proxy:
        settings = make_settings(
            tmp_path, prometheus={"url": proxy.url, "timeout": 1, "retries": retries, "retry_backoff": 0.1}
        )
        services = build_services(settings, schedule=False)
        try:
            started = time.monotonic()
            services.evaluate_now()
            elapsed = time.monotonic() - started
            ready = ApiClient(services.app).get("/readyz").json()
        finally:
            services.close()
    assert elapsed < 2.0, elapsed  # 1 s for the probe, plus the evaluation itself
    assert ready["prometheus"]["reachable"] is False and "timed out after 1s" in ready["prometheus"]["reason"]


def test_a_prometheus_that_answers_slowly_still_ends_the_cycle_at_the_timeout(
    tmp_path: Path, prometheus: PrometheusProcess
) -> None:
    """Every query answers, 0.5 s late: one cycle's ~50 queries on 8 workers would take ~3.5 s. The configured
    1 s timeout bounds the whole collection, not each query, so the cycle ends near 1 s and says why."""
    with RecordingProxy(prometheus.url, delay=0.5) as proxy:
        settings = make_settings(tmp_path, prometheus={"url": proxy.url, "timeout": 1, "retries": 0})
        services = build_services(settings, schedule=False)
        try:
            started = time.monotonic()
            services.evaluate_now()
            elapsed = time.monotonic() - started
            ready = ApiClient(services.app).get("/readyz").json()
        finally:
            services.close()
    assert elapsed < 2.0, elapsed
    assert ready["prometheus"]["reachable"] is False
    assert "within the configured timeout (1s)" in ready["prometheus"]["reason"], ready["prometheus"]
