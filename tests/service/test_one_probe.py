"""An evaluation cycle probes Prometheus once: the observer's probe is the health /readyz and /metrics show.

A real Prometheus logs every query it evaluates (`query_log_file`), so the count is the server's, not ours.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.service.app import build_services
from tests.conftest import PrometheusFactory
from tests.harness.stack import wait_for
from tests.service.conftest import ApiClient, make_settings

pytestmark = pytest.mark.integration

PROBE = "vector(1)"
AGE = "min(time() - timestamp(vllm:num_requests_running))"


def _queries(log: Path) -> list[str]:
    return [json.loads(line)["params"]["query"] for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize(
    "cycles",
    [
        pytest.param(1, id="one evaluation probes once"),
        pytest.param(3, id="three evaluations probe three times, once each"),
    ],
)
def test_each_evaluation_probes_prometheus_once(
    tmp_path: Path, prometheus_factory: PrometheusFactory, cycles: int
) -> None:
    log = tmp_path / "queries.log"
    prometheus = prometheus_factory(query_log_file=log)
    settings = make_settings(tmp_path, prometheus={"url": prometheus.url, "timeout": 10, "retries": 0})
    services = build_services(settings, schedule=False)
    try:
        for _ in range(cycles):
            services.evaluate_now()
        ready = ApiClient(services.app).get("/readyz").json()
    finally:
        services.close()
    # The data-age query is the cycle's last: once the log holds one per cycle, it holds the whole cycle.
    queries = wait_for(lambda: _queries(log).count(AGE) == cycles and _queries(log), what="the query log")
    assert queries.count(PROBE) == cycles, [q for q in queries if q in (PROBE, AGE)]
    assert ready["prometheus"]["reachable"] is True and ready["prometheus"]["checked_at"] is not None
