"""/metrics is rendered once per change (snapshot, minute, skipped rows), then served from the cache."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.service.app import Services
from tests.service.conftest import ApiClient
from tests.service.fakes import Clock


class _Counting(Collector):
    def __init__(self) -> None:
        self.renders = 0

    def collect(self) -> Iterator[Metric]:
        self.renders += 1
        yield GaugeMetricFamily("test_renders", "How often the registry was collected.", value=self.renders)


def test_scrapes_between_changes_are_served_from_the_cache(services: Services, api: ApiClient, clock: Clock) -> None:
    counting = _Counting()
    services.registry.register(counting)
    services.evaluate_now()
    bodies = [api.get("/metrics").text for _ in range(5)]
    assert counting.renders == 1 and len(set(bodies)) == 1
    services.evaluate_now()  # a new snapshot
    assert api.get("/metrics").text != bodies[0] and counting.renders == 2
    clock.advance(60)  # business hours are judged to the minute
    api.get("/metrics")
    assert counting.renders == 3
