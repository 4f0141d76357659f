"""One Prometheus, then one VictoriaMetrics, serving `fleet_history` for the catalog tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from monitor.source import HttpPrometheusSource, SourceSettings
from tests.harness.stack import BACKENDS, Stack
from tests.queries import fleet_history


@pytest.fixture(scope="package", params=BACKENDS)
def fleet_source(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[HttpPrometheusSource]:
    """The history served by each query backend in turn: the catalog must read the same answers from both."""
    stack = Stack(tmp_path_factory.mktemp("fleet"))
    try:
        prom = stack.backend(request.param, openmetrics=fleet_history.build())
        with HttpPrometheusSource(SourceSettings(url=prom.url, retries=0)) as source:
            yield source
    finally:
        stack.close()
