"""A live replica: a prometheus_client exporter with vLLM's metric shapes, scraped every second; then it dies.

While it is up the catalog reads its values; once its scrape fails Prometheus writes staleness markers, so
instant values vanish (unknown, not zero), the replica counts as down, and `gate_down` turns the tier's
zero request rate into an unknown.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from fleetsim.promstack import RESTORE_VLLM_COLONS, ScrapeJob
from monitor import queries as q
from monitor.source import HttpPrometheusSource, SourceSettings, gate_down, measurement
from tests.conftest import ExporterFactory
from tests.harness.stack import BACKENDS, Stack, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TIER = {"tier": "live"}
LABELS = {"model_name": "m", "engine": "0"}


@pytest.fixture
def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    running = Gauge("vllm:num_requests_running", "Running.", list(LABELS), registry=reg)
    running.labels(**LABELS).set(7)
    success = Counter("vllm:request_success", "Finished.", [*LABELS, "finished_reason"], registry=reg)
    success.labels(**LABELS, finished_reason="stop").inc(10)
    ttft = Histogram("vllm:time_to_first_token_seconds", "TTFT.", list(LABELS), buckets=(0.1, 0.5, 1.0),
                     registry=reg)  # fmt: skip
    for _ in range(9):
        ttft.labels(**LABELS).observe(0.05)
    ttft.labels(**LABELS).observe(0.7)
    return reg


@pytest.fixture(params=BACKENDS)
def source(
    registry: CollectorRegistry, exporter_factory: ExporterFactory, stack: Stack, request: pytest.FixtureRequest
) -> Iterator[tuple[HttpPrometheusSource, object]]:
    """Scraped by Prometheus, then by VictoriaMetrics: both write staleness markers when the scrape fails."""
    exporter = exporter_factory(registry)
    job = ScrapeJob("vllm", targets=(exporter.target,), labels={**TIER, "namespace": "llm", "pod": "live-0"},
                    metric_relabel_configs=[RESTORE_VLLM_COLONS])  # fmt: skip
    prom = stack.backend(request.param, jobs=[job])
    with HttpPrometheusSource(SourceSettings(url=prom.url, retries=0)) as src:
        yield src, exporter


def test_a_live_replica_is_read_and_then_its_death_is_unknown_not_zero(
    source: tuple[HttpPrometheusSource, object],
) -> None:
    src, exporter = source

    def running() -> float | None:
        return measurement(src.instant(q.RUNNING.for_tier(TIER))).value

    assert wait_for(running, 20, "the first scrape") == 7.0
    assert measurement(src.instant(q.REPLICAS_UP.for_tier(TIER, window="1m"))).value == 1.0
    wait_for(lambda: src.instant('count_over_time(up{tier="live"}[1m]) >= 2').samples, 10, "a second scrape")
    ttft = measurement(src.instant(q.TTFT_P50.for_tier(TIER, window="1m")))
    # No new observations between scrapes: no data, not 0 (NaN from Prometheus; VictoriaMetrics drops NaN results).
    assert ttft.value is None and ("NaN" in ttft.reason or ttft.reason.startswith("no data"))
    age = measurement(src.instant(q.DATA_AGE.for_tier(TIER))).value
    assert age is not None and 0 <= age < 5

    exporter.close()  # type: ignore[attr-defined]
    wait_for(lambda: measurement(src.instant(q.REPLICAS_DOWN.for_tier(TIER, window="1m"))).value == 1.0, 10,
             "the failed scrape")  # fmt: skip
    gone = measurement(src.instant(q.RUNNING.for_tier(TIER)))
    assert (gone.value, gone.reason) == (None, "no data: the query matched no series")
    up = measurement(src.instant(q.REPLICAS_UP.for_tier(TIER, window="1m")))
    assert up.value == 0.0
    rate = measurement(src.instant(q.REQUEST_RATE.for_tier(TIER, window="1m")))
    assert rate.value == 0.0  # the counter did not move: a real zero ...
    assert gate_down(rate, up).reason == "target down: no replica of the tier is up"  # ... from a dead tier
