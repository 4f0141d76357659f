"""The loopback stack the panel queries run against (tests/dashboards/world.py), started once for the package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dashboards.world import World
from tests.harness.stack import require_binaries


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_binaries("prometheus", "promtool")
    started = World.start(tmp_path_factory.mktemp("world"))
    try:
        started.wait_until_scraped()
        yield started
    finally:
        started.close()
