"""One Prometheus serving `fleet_history` for the whole catalog test module (backfill takes a few seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from monitor.source import HttpPrometheusSource, SourceSettings
from tests.harness.stack import Stack
from tests.queries import fleet_history


@pytest.fixture(scope="package")
def fleet_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpPrometheusSource]:
    stack = Stack(tmp_path_factory.mktemp("fleet"))
    try:
        prom = stack.prometheus(openmetrics=fleet_history.build())
        with HttpPrometheusSource(SourceSettings(url=prom.url, retries=0)) as source:
            yield source
    finally:
        stack.close()
