"""What becomes of vLLM's metric names between prometheus_client and the query API, checked against the
installed library and a real Prometheus, not asserted from memory.

prometheus_client >= 0.23.0 answers an OpenMetrics 1.0 request without `escaping=allow-utf-8` with `:` turned
into `_` on sample lines (its `# TYPE` lines keep the colon); text-format answers keep it. Prometheus 2.x asks
for OpenMetrics 1.0 first, so a vLLM scraped by it stores `vllm_*` names unless RESTORE_VLLM_COLONS runs.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest
from prometheus_client import CollectorRegistry, Gauge, exposition
from prometheus_client.utils import parse_version

from fleetsim.promstack import RESTORE_VLLM_COLONS, ScrapeJob
from tests.conftest import ExporterFactory, PrometheusFactory
from tests.harness.stack import api_query, wait_for

pytestmark = pytest.mark.integration

ESCAPES = parse_version(version("prometheus_client")) >= (0, 23, 0)
PROMETHEUS_2 = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # fmt: skip
PROMETHEUS_3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8,text/plain;version=0.0.4;q=0.5"


def _registry(name: str = "vllm:num_requests_running") -> CollectorRegistry:
    registry = CollectorRegistry()
    Gauge(name, "Running.", ["model_name"], registry=registry).labels("m").set(3)
    return registry


@pytest.mark.parametrize(
    ("accept", "sample"),
    [
        pytest.param("", "vllm:num_requests_running", id="curl (no Accept header) gets the colons"),
        pytest.param("text/plain;version=0.0.4", "vllm:num_requests_running", id="the text format keeps them"),
        pytest.param(PROMETHEUS_3, "vllm:num_requests_running", id="Prometheus 3 asks for UTF-8 and keeps them"),
        pytest.param(PROMETHEUS_2, "vllm_num_requests_running" if ESCAPES else "vllm:num_requests_running",
                     id="Prometheus 2 gets underscores from prometheus_client 0.23 on"),
    ],
)  # fmt: skip
def test_prometheus_client_escapes_sample_names_only_for_openmetrics_without_utf8(accept: str, sample: str) -> None:
    encoder, _ = exposition.choose_encoder(accept)
    lines = encoder(_registry()).decode().splitlines()
    assert [ln.split("{")[0] for ln in lines if not ln.startswith("#")] == [sample]
    assert "# TYPE vllm:num_requests_running gauge" in lines


@pytest.mark.parametrize(
    ("exported", "rules", "stored"),
    [
        pytest.param("vllm:num_requests_running", (), "vllm_num_requests_running" if ESCAPES else
                     "vllm:num_requests_running", id="a Prometheus 2 scrape of prometheus_client stores underscores"),
        pytest.param("vllm:num_requests_running", (RESTORE_VLLM_COLONS,), "vllm:num_requests_running",
                     id="the scrape rule restores vLLM's names"),
        pytest.param("ray_vllm_num_requests_running", (RESTORE_VLLM_COLONS,), "vllm:num_requests_running",
                     id="the same rule reads Ray Serve's ray_vllm_ names as vLLM's"),
        pytest.param("ray_vllm:num_requests_running", (RESTORE_VLLM_COLONS,), "vllm:num_requests_running",
                     id="and the older ray_vllm: ones"),
    ],
)  # fmt: skip
def test_a_real_scrape_stores_the_names_the_catalog_reads(
    exporter_factory: ExporterFactory, prometheus_factory: PrometheusFactory, exported: str,
    rules: tuple[dict[str, object], ...], stored: str,
) -> None:  # fmt: skip
    exporter = exporter_factory(_registry(exported))
    prom = prometheus_factory(jobs=[ScrapeJob("vllm", targets=(exporter.target,), metric_relabel_configs=rules)])
    result = wait_for(lambda: api_query(prom.url, 'count by (__name__) ({model_name="m"})'), 20, "the first scrape")
    assert [r["metric"]["__name__"] for r in result] == [stored]
